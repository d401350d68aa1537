package protocol

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// DefaultNamespace is the namespace of a cluster that names none.
const DefaultNamespace = "partopt"

// MaxNamespaceLen is the longest namespace.
const MaxNamespaceLen = 32

// Names are the JetStream streams, consumers, buckets and subjects of one
// cluster namespace: clusters of different namespaces share a NATS server and
// never see each other's tasks, results, models or jobs. The default
// namespace's names are those of the clusters before namespaces (PARTOPT_TASKS,
// partopt.task.JOB, …), so that their streams and jobs carry over.
//
//	n, err := protocol.NewNames("team-a") // TEAM-A_TASKS, team-a.task.JOB, team-a-jobs, …
//
// The subject functions expect a job that passes ValidateJob.
type Names struct {
	ns     string // team-a: buckets and consumers
	stream string // TEAM-A: stream prefix
	subj   string // team-a.: subject prefix
}

// NewNames returns the names of namespace ns ("": DefaultNamespace), which
// must be 1 to MaxNamespaceLen of a–z, 0–9, '_' and '-', starting with a
// letter or digit: a NATS subject token and, upper-cased, a stream name.
func NewNames(ns string) (Names, error) {
	if ns == "" {
		ns = DefaultNamespace
	}
	if len(ns) > MaxNamespaceLen {
		return Names{}, fmt.Errorf("namespace %.80q: want 1 to %d characters, have %d", ns, MaxNamespaceLen, len(ns))
	}
	for i := 0; i < len(ns); i++ {
		c := ns[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || i > 0 && (c == '_' || c == '-')) {
			return Names{}, fmt.Errorf("namespace %q: character %q at %d: use a-z 0-9, and _ - after the first", ns, c, i)
		}
	}
	return Names{ns: ns, stream: strings.ToUpper(ns), subj: ns + "."}, nil
}

// DefaultNames are the names of DefaultNamespace.
var DefaultNames, _ = NewNames(DefaultNamespace)

// Namespace is the namespace of the names ("" for the zero Names: use
// NewNames).
func (n Names) Namespace() string { return n.ns }

// StreamTasks is the work-queue stream of WindowTasks (TaskStreamSubjects): a
// task is removed when a worker acks it.
func (n Names) StreamTasks() string { return n.stream + "_TASKS" }

// StreamResults holds WindowResults, ResultRefs and Errors
// (ResultStreamSubjects) until the coordinator has merged them.
func (n Names) StreamResults() string { return n.stream + "_RESULTS" }

// ConsumerWorkers is the durable pull consumer of StreamTasks that every worker
// shares.
func (n Names) ConsumerWorkers() string { return n.ns + "-workers" }

// CoordinatorConsumer is the durable pull consumer of StreamResults through
// which the coordinator collects job's results and errors (ResultFilter and
// ErrorSubject).
func (n Names) CoordinatorConsumer(job string) string { return n.ns + "-coordinator-" + job }

// ObjectBucket is the object store of models, fixed labels, large results and
// outputs (Payload.Object, ModelRef.Object, OutputObject).
func (n Names) ObjectBucket() string { return n.ns + "-objects" }

// JobBucket is the key-value bucket of JobSpecs and statuses (JobSpecKey,
// JobStatusKey, JobLoadsKey).
func (n Names) JobBucket() string { return n.ns + "-jobs" }

// SubjectSubmit takes a JobSpec (request-reply to the coordinator).
func (n Names) SubjectSubmit() string { return n.subj + "job.submit" }

// TaskSubject carries the WindowTasks of job.
func (n Names) TaskSubject(job string) string { return n.subj + "task." + job }

// ResultSubject carries the WindowResult (or ResultRef) of a window.
func (n Names) ResultSubject(job string, round, window int) string {
	return n.subj + "result." + job + "." + strconv.Itoa(round) + "." + strconv.Itoa(window)
}

// ResultFilter matches every result of job (a consumer filter).
func (n Names) ResultFilter(job string) string { return n.subj + "result." + job + ".>" }

// ResultRoundFilter matches the results of one round of job.
func (n Names) ResultRoundFilter(job string, round int) string {
	return n.subj + "result." + job + "." + strconv.Itoa(round) + ".>"
}

// ErrorSubject carries the Errors of job.
func (n Names) ErrorSubject(job string) string { return n.subj + "error." + job }

// ProgressSubject carries the Progress of job (core NATS: only the latest matters).
func (n Names) ProgressSubject(job string) string { return n.subj + "progress." + job }

// CancelSubject takes a Cancel of job.
func (n Names) CancelSubject(job string) string { return n.subj + "job.cancel." + job }

// DeleteSubject takes a request to delete job, which must have ended (its
// objects, results and table entry; the reply is JSON {"error": …} or {}).
func (n Names) DeleteSubject(job string) string { return n.subj + "job.delete." + job }

// StatusSubject answers a request with the Progress of job.
func (n Names) StatusSubject(job string) string { return n.subj + "job.status." + job }

// TaskStreamSubjects are the subjects of StreamTasks.
func (n Names) TaskStreamSubjects() []string { return []string{n.subj + "task.*"} }

// ResultStreamSubjects are the subjects of StreamResults.
func (n Names) ResultStreamSubjects() []string {
	return []string{n.subj + "result.>", n.subj + "error.*"}
}

// MaxDeliveriesAdvisory is the subject on which JetStream reports a task of
// StreamTasks that exhausted its deliveries to ConsumerWorkers (a JSON advisory
// with the task's stream sequence).
func (n Names) MaxDeliveriesAdvisory() string {
	return "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + n.StreamTasks() + "." + n.ConsumerWorkers()
}

// MsgID is the Nats-Msg-Id header of a window's result, so that JetStream drops
// a republished duplicate within the stream's duplicate window.
func MsgID(job string, round, window int) string {
	return job + "/" + strconv.Itoa(round) + "/" + strconv.Itoa(window)
}

// TaskMsgID is the Nats-Msg-Id header of a window's task published by the
// coordinator of epoch (one per coordinator run): a coordinator never queues a
// task twice, and one that resumes a job is not taken for its predecessor.
func TaskMsgID(job string, round, window int, epoch string) string {
	return MsgID(job, round, window) + "/" + epoch
}

// JobSpecKey is the JobBucket key of job's JobSpec.
func JobSpecKey(job string) string { return job + ".spec" }

// JobLoadsKey is the JobBucket key counting the coordinators' starts of job
// that have not reached its windows (cluster.Resources.StartLoading).
func JobLoadsKey(job string) string { return job + ".loads" }

// JobStatusKey is the JobBucket key of job's latest status (JSON, written by the
// coordinator), readable when no coordinator answers.
func JobStatusKey(job string) string { return job + ".status" }

// OutputObject is the ObjectBucket name of a finished job's output file name
// (labels.plf, report.json, …), which `partopt fetch` downloads.
func OutputObject(job, name string) string { return job + "/out/" + name }

// ModelObject is the ObjectBucket name of job's uploaded model.
func ModelObject(job string) string { return job + "/model" }

// EvidenceObject is the ObjectBucket name of job's uploaded evidence file.
func EvidenceObject(job string) string { return job + "/evidence" }

// RoundFixedObject is the ObjectBucket name of the labels fixed before a round,
// over the whole raster (a Fixed that every window of the round shares).
func RoundFixedObject(job string, round int) string {
	return job + "/fixed/" + strconv.Itoa(round)
}

// FixedObject is the ObjectBucket name of one window's fixed labels.
func FixedObject(job string, round, window int) string {
	return RoundFixedObject(job, round) + "/" + strconv.Itoa(window)
}

// ResultObject is the ObjectBucket name of a window's WindowResult message when
// it is too large to publish (see ResultRef).
func ResultObject(job string, round, window int) string {
	return job + "/result/" + strconv.Itoa(round) + "/" + strconv.Itoa(window)
}

// AttemptResultObject is the ObjectBucket name of the result of a window's
// task of message id msgID (TaskMsgID): ResultObject and the attempt, so that
// an attempt's result never overwrites the one another attempt's reference
// points to. An id not of that form names ResultObject.
func AttemptResultObject(job string, round, window int, msgID string) string {
	base := ResultObject(job, round, window)
	attempt, ok := strings.CutPrefix(msgID, MsgID(job, round, window)+"/")
	if !ok || ValidateJob(attempt) != nil { // an attempt is a token as a job id is
		return base
	}
	return base + "/" + attempt
}

// IsResultObject says whether name is the ObjectBucket name of a result of
// the window, of any attempt (AttemptResultObject).
func IsResultObject(name, job string, round, window int) bool {
	base := ResultObject(job, round, window)
	if name == base {
		return true
	}
	attempt, ok := strings.CutPrefix(name, base+"/")
	return ok && ValidateJob(attempt) == nil
}

// MaxJobLen is the longest job id.
const MaxJobLen = 64

// ValidateJob checks that job is a safe subject token: 1 to MaxJobLen of
// A–Z, a–z, 0–9, '_' and '-'.
func ValidateJob(job string) error {
	if len(job) == 0 || len(job) > MaxJobLen {
		return fmt.Errorf("job id %.80q: want 1 to %d characters, have %d", job, MaxJobLen, len(job))
	}
	for i := 0; i < len(job); i++ {
		if !tokenByte(job[i]) {
			return fmt.Errorf("job id %q: character %q at %d: use only A-Z a-z 0-9 _ - (the id is a NATS subject token)", job, job[i], i)
		}
	}
	return nil
}

func tokenByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// ValidateObject checks an object name: 1 to 255 of A–Z, a–z, 0–9, '_', '-',
// '.' and '/' (the names above are of this form).
func ValidateObject(name string) error {
	if len(name) == 0 || len(name) > 255 {
		return fmt.Errorf("object name %.80q: want 1 to 255 characters, have %d", name, len(name))
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !tokenByte(c) && c != '.' && c != '/' {
			return fmt.Errorf("object name %.80q: character %q at %d: use only A-Z a-z 0-9 _ - . /", name, c, i)
		}
	}
	return nil
}

// MaxPageURLLen is the longest status page URL a replica may record.
const MaxPageURLLen = 2048

// CheckPageURL checks a replica's status page URL, which the other replicas'
// pages proxy to while it leads: an http or https URL of a host, its path
// empty or "/", without user info, query or fragment. The URL is recorded in
// the raft table, which anyone who reaches a raft port can write to (raft's
// transport is not authenticated): the check keeps such a record from making
// followers proxy their users to a path, credentials or query of its choosing.
func CheckPageURL(page string) error {
	if len(page) > MaxPageURLLen {
		return fmt.Errorf("status page URL of %d bytes, at most %d", len(page), MaxPageURLLen)
	}
	u, err := url.Parse(page)
	switch {
	case err != nil:
		return fmt.Errorf("status page URL %q does not parse", page)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Opaque != "":
		return fmt.Errorf("status page URL %q: want http://HOST:PORT or https://HOST:PORT", page)
	case u.User != nil:
		return errors.New("status page URL with user info: a page URL is shown to everyone, and its page needs no login")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || (u.Path != "" && u.Path != "/"):
		return fmt.Errorf("status page URL %q: want http://HOST:PORT or https://HOST:PORT, without user, path, query or fragment", page)
	}
	return nil
}
