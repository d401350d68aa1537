package protocol

import (
	"strings"
	"testing"
)

func TestSubjectsAndNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{TaskSubject("job-1"), "partopt.task.job-1"},
		{ResultSubject("job-1", 2, 37), "partopt.result.job-1.2.37"},
		{ResultFilter("job-1"), "partopt.result.job-1.>"},
		{ProgressSubject("job-1"), "partopt.progress.job-1"},
		{ErrorSubject("job-1"), "partopt.error.job-1"},
		{CancelSubject("job-1"), "partopt.job.cancel.job-1"},
		{StatusSubject("job-1"), "partopt.job.status.job-1"},
		{SubjectSubmit, "partopt.job.submit"},
		{MsgID("job-1", 2, 37), "job-1/2/37"},
		{TaskMsgID("job-1", 2, 37, "e9"), "job-1/2/37/e9"},
		{ResultRoundFilter("job-1", 2), "partopt.result.job-1.2.>"},
		{CoordinatorConsumer("job-1"), "partopt-coordinator-job-1"},
		{JobStatusKey("job-1"), "job-1.status"},
		{EvidenceObject("job-1"), "job-1/evidence"},
		{OutputObject("job-1", "labels.plf"), "job-1/out/labels.plf"},
		{JobSpecKey("job-1"), "job-1.spec"},
		{ModelObject("job-1"), "job-1/model"},
		{RoundFixedObject("job-1", 2), "job-1/fixed/2"},
		{FixedObject("job-1", 2, 37), "job-1/fixed/2/37"},
		{ResultObject("job-1", 2, 37), "job-1/result/2/37"},
		{strings.Join(TaskStreamSubjects(), " "), "partopt.task.*"},
		{strings.Join(ResultStreamSubjects(), " "), "partopt.result.> partopt.error.*"},
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
	// Every subject stays inside the streams' subjects (one stream per subject).
	if !strings.HasPrefix(TaskSubject("j"), "partopt.task.") || !strings.HasPrefix(ErrorSubject("j"), "partopt.error.") {
		t.Error("subjects moved out of their streams")
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
