package protocol

import (
	"strings"
	"testing"
)

func TestSubjectsAndNames(t *testing.T) {
	d := DefaultNames
	for _, tc := range []struct{ got, want string }{
		{d.TaskSubject("job-1"), "partopt.task.job-1"},
		{d.ResultSubject("job-1", 2, 37), "partopt.result.job-1.2.37"},
		{d.ResultFilter("job-1"), "partopt.result.job-1.>"},
		{d.ProgressSubject("job-1"), "partopt.progress.job-1"},
		{d.ErrorSubject("job-1"), "partopt.error.job-1"},
		{d.CancelSubject("job-1"), "partopt.job.cancel.job-1"},
		{d.StatusSubject("job-1"), "partopt.job.status.job-1"},
		{d.DeleteSubject("job-1"), "partopt.job.delete.job-1"},
		{d.SubjectSubmit(), "partopt.job.submit"},
		{MsgID("job-1", 2, 37), "job-1/2/37"},
		{TaskMsgID("job-1", 2, 37, "e9"), "job-1/2/37/e9"},
		{d.ResultRoundFilter("job-1", 2), "partopt.result.job-1.2.>"},
		{d.CoordinatorConsumer("job-1"), "partopt-coordinator-job-1"},
		{JobStatusKey("job-1"), "job-1.status"},
		{EvidenceObject("job-1"), "job-1/evidence"},
		{OutputObject("job-1", "labels.plf"), "job-1/out/labels.plf"},
		{JobSpecKey("job-1"), "job-1.spec"},
		{ModelObject("job-1"), "job-1/model"},
		{RoundFixedObject("job-1", 2), "job-1/fixed/2"},
		{FixedObject("job-1", 2, 37), "job-1/fixed/2/37"},
		{ResultObject("job-1", 2, 37), "job-1/result/2/37"},
		{AttemptResultObject("job-1", 2, 37, TaskMsgID("job-1", 2, 37, "e9-2")), "job-1/result/2/37/e9-2"},
		{AttemptResultObject("job-1", 2, 37, MsgID("job-1", 2, 37)), "job-1/result/2/37"},
		{AttemptResultObject("job-1", 2, 37, TaskMsgID("job-1", 2, 3, "e9")), "job-1/result/2/37"},    // another window's task
		{AttemptResultObject("job-1", 2, 37, TaskMsgID("job-1", 2, 37, "../x")), "job-1/result/2/37"}, // not a token
		{strings.Join(d.TaskStreamSubjects(), " "), "partopt.task.*"},
		{strings.Join(d.ResultStreamSubjects(), " "), "partopt.result.> partopt.error.*"},
		// The default namespace keeps the names of the clusters before namespaces.
		{d.StreamTasks(), "PARTOPT_TASKS"},
		{d.StreamResults(), "PARTOPT_RESULTS"},
		{d.ConsumerWorkers(), "partopt-workers"},
		{d.ObjectBucket(), "partopt-objects"},
		{d.JobBucket(), "partopt-jobs"},
		{d.MaxDeliveriesAdvisory(), "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.PARTOPT_TASKS.partopt-workers"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	for _, name := range []string{ModelObject("j"), RoundFixedObject("j", 0), FixedObject("j", 1, 2), ResultObject("j", 3, 4)} {
		if err := ValidateObject(name); err != nil {
			t.Errorf("ValidateObject(%q) = %v", name, err)
		}
	}
	for _, tc := range []struct {
		name string
		want bool
	}{
		{ResultObject("j", 3, 4), true},
		{AttemptResultObject("j", 3, 4, TaskMsgID("j", 3, 4, "e-1")), true},
		{ResultObject("j", 3, 5), false},
		{ResultObject("k", 3, 4), false},
		{ResultObject("j", 3, 4) + "/a/b", false},
		{ModelObject("j"), false},
		{OutputObject("j", "labels.plf"), false},
	} {
		if got := IsResultObject(tc.name, "j", 3, 4); got != tc.want {
			t.Errorf("IsResultObject(%q, j, 3, 4) = %v, want %v", tc.name, got, tc.want)
		}
	}
	// Every subject stays inside the streams' subjects (one stream per subject).
	if !strings.HasPrefix(d.TaskSubject("j"), "partopt.task.") || !strings.HasPrefix(d.ErrorSubject("j"), "partopt.error.") {
		t.Error("subjects moved out of their streams")
	}
}

// Two namespaces share no stream, consumer, bucket or subject: every name of
// one differs from the other's, and no subject of one matches the other's
// stream subjects.
func TestNamespacesShareNothing(t *testing.T) {
	names := func(n Names) []string {
		return []string{n.StreamTasks(), n.StreamResults(), n.ConsumerWorkers(), n.CoordinatorConsumer("j"),
			n.ObjectBucket(), n.JobBucket(), n.SubjectSubmit(), n.TaskSubject("j"), n.ResultSubject("j", 1, 2),
			n.ErrorSubject("j"), n.ProgressSubject("j"), n.CancelSubject("j"), n.StatusSubject("j"), n.DeleteSubject("j"), n.MaxDeliveriesAdvisory()}
	}
	a, err := NewNames("team-a")
	if err != nil {
		t.Fatal(err)
	}
	for _, other := range []string{"", "team-b", "team", "team-a-b", "teama"} {
		b, err := NewNames(other)
		if err != nil {
			t.Fatal(err)
		}
		theirs := map[string]bool{}
		for _, s := range names(b) {
			theirs[s] = true
		}
		for _, s := range names(a) {
			if theirs[s] {
				t.Errorf("%q and %q share %q", a.Namespace(), b.Namespace(), s)
			}
		}
		for _, s := range []string{a.TaskSubject("j"), a.ResultSubject("j", 1, 2), a.ErrorSubject("j")} {
			for _, f := range append(b.TaskStreamSubjects(), b.ResultStreamSubjects()...) {
				if strings.HasPrefix(s, strings.TrimSuffix(strings.TrimSuffix(f, ">"), "*")) {
					t.Errorf("%q's subject %q falls in %q's stream subject %q", a.Namespace(), s, b.Namespace(), f)
				}
			}
		}
	}
	if a.StreamTasks() != "TEAM-A_TASKS" || a.TaskSubject("j") != "team-a.task.j" || a.JobBucket() != "team-a-jobs" {
		t.Errorf("team-a: %q %q %q", a.StreamTasks(), a.TaskSubject("j"), a.JobBucket())
	}
}

func TestNamespacesAreSafeNames(t *testing.T) {
	for _, ns := range []string{"a", "team-a", "x_1", "0ops", strings.Repeat("n", MaxNamespaceLen)} {
		if _, err := NewNames(ns); err != nil {
			t.Errorf("NewNames(%q) = %v", ns, err)
		}
	}
	for _, ns := range []string{"Team", "-a", "_a", "a.b", "a*", "a>", "a b", "ä", strings.Repeat("n", MaxNamespaceLen+1)} {
		if _, err := NewNames(ns); err == nil {
			t.Errorf("NewNames(%q) accepted", ns)
		}
	}
	if n, err := NewNames(""); err != nil || n != DefaultNames {
		t.Errorf(`NewNames("") = %v, %v`, n, err)
	}
}

func TestMsgIDsAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, job := range []string{"a", "a-1", "a_1"} {
		for round := range 12 {
			for window := range 12 {
				id := MsgID(job, round, window)
				if seen[id] {
					t.Fatalf("MsgID(%q, %d, %d) = %q repeats", job, round, window, id)
				}
				seen[id] = true
			}
		}
	}
}

func TestValidateJob(t *testing.T) {
	for _, tc := range []struct {
		job  string
		want string // "" for valid
	}{
		{"a", ""},
		{"Seg_2026-05-01", ""},
		{strings.Repeat("x", MaxJobLen), ""},
		{"", "want 1 to 64 characters, have 0"},
		{strings.Repeat("x", MaxJobLen+1), "have 65"},
		{"a.b", `character '.' at 1`},
		{"a*", `character '*'`},
		{"a>", `character '>'`},
		{"a b", `character ' '`},
		{"ü", "character"},
		{"a/b", "character '/'"},
	} {
		err := ValidateJob(tc.job)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("ValidateJob(%q) = %v, want %q", tc.job, err, tc.want)
		}
	}
}

func TestValidateObject(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"j/fixed/0/1", true},
		{"model.grid", true},
		{"", false},
		{strings.Repeat("o", 256), false},
		{"a b", false},
		{"a\x00", false},
	} {
		if err := ValidateObject(tc.name); (err == nil) != tc.ok {
			t.Errorf("ValidateObject(%.20q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// TestCheckPageURL: a status page URL a replica records (and the others proxy
// to) is an http(s) URL of a host and nothing more.
func TestCheckPageURL(t *testing.T) {
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"http://c1:8222", true},
		{"https://c1.example.org:443/", true},
		{"http://[::1]:8222", true},
		{"", false},
		{"c1:8222", false},
		{"ftp://c1:8222", false},
		{"file:///etc/passwd", false},
		{"http://", false},
		{"http://alice:secret@c1:8222", false},
		{"http://c1:8222/admin", false},
		{"http://c1:8222/?a=b", false},
		{"http://c1:8222/#x", false},
		{"http:c1", false},
		{"http://c1:8222/" + strings.Repeat("a", MaxPageURLLen), false},
	} {
		err := CheckPageURL(c.url)
		if (err == nil) != c.ok {
			t.Errorf("CheckPageURL(%.60q): %v, want ok %v", c.url, err, c.ok)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("CheckPageURL(%q) quotes the password: %v", c.url, err)
		}
	}
}
