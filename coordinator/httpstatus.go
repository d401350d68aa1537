package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/partopt/partopt/protocol"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// JobView is one job as the status page shows it.
type JobView struct {
	Summary Summary
	// PNG, when set, renders the job's live persistency map (labelfile.RenderPNG
	// of its label files), at most maxSide pixels a side.
	PNG func(w io.Writer, maxSide int) error
}

// StatusPage serves the coordinator's status: Jobs lists the jobs (newest first
// is fine; the page keeps the order given), Gatherer the Prometheus metrics
// (nil: prometheus.DefaultGatherer).
//
// Routes:
//
//	GET /                              HTML overview of every job
//	GET /jobs/{job}                    the job's Summary as JSON
//	GET /jobs/{job}/persistency.png    its persistency map, ?max= pixels a side
//	GET /metrics                       Prometheus exposition
//	GET /healthz                       "ok"
type StatusPage struct {
	Jobs     func() []JobView
	Gatherer prometheus.Gatherer
	// Leader, when set, returns the page of the replica that runs the jobs
	// when it is another (a URL; "" when this one leads or none is known): a
	// follower serves the leader's / and /jobs/… through a reverse proxy, and
	// its own /metrics and /healthz.
	Leader func() string
}

// proxiedHeader marks a request a follower passed on, which is never passed on
// again (a stale leader record cannot make replicas loop).
const proxiedHeader = "X-Partopt-Proxied-By"

// Bounds of the persistency map's side: large enough to be useful, small enough
// that a request cannot make the coordinator render a gigapixel image.
const (
	pngDefaultSide = 1024
	pngMinSide     = 16
	pngMaxSide     = 4096
)

// Handler returns the status page's routes.
func (p *StatusPage) Handler() http.Handler {
	g := p.Gatherer
	if g == nil {
		g = prometheus.DefaultGatherer
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", p.leaders(p.serveIndex))
	mux.HandleFunc("GET /jobs/{job}", p.leaders(p.serveJob))
	mux.HandleFunc("GET /jobs/{job}/persistency.png", p.leaders(p.servePNG))
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	return mux
}

// leaders serves a job page with h, or the leader's through a reverse proxy
// when another replica leads (Leader).
func (p *StatusPage) leaders(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if p.Leader == nil || r.Header.Get(proxiedHeader) != "" {
			h(w, r)
			return
		}
		leader := p.Leader()
		if leader == "" {
			h(w, r)
			return
		}
		if err := protocol.CheckPageURL(leader); err != nil {
			http.Error(w, "this replica follows; the leader's page: "+err.Error(), http.StatusBadGateway)
			return
		}
		target, _ := url.Parse(leader)
		proxy := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(target)
				pr.Out.Header.Set(proxiedHeader, r.Host)
				// The page needs no login: what a browser sends for this
				// host is not for another's.
				pr.Out.Header.Del("Authorization")
				pr.Out.Header.Del("Cookie")
			},
			ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
				http.Error(w, fmt.Sprintf("this replica follows, and the leader's page at %s does not answer: %v", leader, err), http.StatusBadGateway)
			},
		}
		proxy.ServeHTTP(w, r)
	}
}

func (p *StatusPage) jobs() []JobView {
	if p.Jobs == nil {
		return nil
	}
	return p.Jobs()
}

// job finds a job by id, answering 404 itself when there is none.
func (p *StatusPage) job(w http.ResponseWriter, r *http.Request) (JobView, bool) {
	id := r.PathValue("job")
	for _, j := range p.jobs() {
		if j.Summary.Job == id {
			return j, true
		}
	}
	http.Error(w, fmt.Sprintf("unknown job %q", id), http.StatusNotFound)
	return JobView{}, false
}

func (p *StatusPage) serveJob(w http.ResponseWriter, r *http.Request) {
	j, ok := p.job(w, r)
	if !ok {
		return
	}
	data, err := json.MarshalIndent(j.Summary, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(data, '\n'))
}

func (p *StatusPage) servePNG(w http.ResponseWriter, r *http.Request) {
	side := pngDefaultSide
	if s := r.URL.Query().Get("max"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			http.Error(w, fmt.Sprintf("max=%q: not an integer", s), http.StatusBadRequest)
			return
		}
		side = min(max(n, pngMinSide), pngMaxSide)
	}
	j, ok := p.job(w, r)
	if !ok {
		return
	}
	if j.PNG == nil {
		http.Error(w, fmt.Sprintf("job %q has no persistency map", j.Summary.Job), http.StatusNotFound)
		return
	}
	// Render fully before answering, so a failure is a 500 and never half an image.
	var buf bytes.Buffer
	if err := j.PNG(&buf, side); err != nil {
		http.Error(w, fmt.Sprintf("rendering the persistency map of %q: %v", j.Summary.Job, err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.Header().Set("Cache-Control", "no-store") // the map changes with every merge
	buf.WriteTo(w)
}

// jobPage is a job as the template needs it: numbers formatted, workers sorted.
type jobPage struct {
	Summary
	Round1   int // 1-based current round
	Percent  string
	Elapsed  string
	Workers  []workerPage
	JobURL   string // the job's JSON
	ImageURL string // empty: no persistency map
}

type workerPage struct {
	Name     string
	Windows  int
	LastSeen string
}

func newJobPage(j JobView) jobPage {
	s := j.Summary
	v := jobPage{Summary: s, Round1: s.Round + 1, Percent: "–", Elapsed: "–"}
	if s.Pixels > 0 {
		v.Percent = fmt.Sprintf("%.1f%%", 100*float64(s.Proven)/float64(s.Pixels))
	}
	if !s.Started.IsZero() && !s.Updated.IsZero() {
		v.Elapsed = s.Updated.Sub(s.Started).Round(time.Second).String()
	}
	for _, name := range slices.Sorted(maps.Keys(s.Workers)) {
		ws := s.Workers[name]
		v.Workers = append(v.Workers, workerPage{Name: name, Windows: ws.Windows, LastSeen: formatTime(ws.LastSeen)})
	}
	// Relative, so the page also works behind a path prefix; the id is
	// path-escaped because it becomes one segment of the URL.
	v.JobURL = "jobs/" + url.PathEscape(s.Job)
	if j.PNG != nil {
		v.ImageURL = v.JobURL + "/persistency.png?max=768"
	}
	return v
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func (p *StatusPage) serveIndex(w http.ResponseWriter, _ *http.Request) {
	jobs := p.jobs()
	views := make([]jobPage, len(jobs))
	for i, j := range jobs {
		views[i] = newJobPage(j)
	}
	var buf bytes.Buffer
	if err := indexTemplate.Execute(&buf, views); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	buf.WriteTo(w)
}

var indexTemplate = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="5">
<title>partopt coordinator</title>
<style>
body { font-family: sans-serif; margin: 1.5em; }
section { border-top: 1px solid #ccc; padding: .5em 0; }
th { text-align: left; padding-right: 1em; font-weight: normal; color: #555; }
td { padding-right: 1em; }
img { max-width: 100%; image-rendering: pixelated; border: 1px solid #ccc; }
.err { color: #b00; }
</style>
</head>
<body>
<h1>partopt coordinator</h1>
<p><a href="metrics">metrics</a></p>
{{range .}}
<section>
<h2><a href="{{.JobURL}}">{{.Job}}</a> — {{.Phase}}</h2>
{{if .Err}}<p class="err">{{.Err}}</p>{{end}}
<table>
<tr><th>round</th><td>{{.Round1}} ({{.Rounds}} done)</td></tr>
<tr><th>windows merged</th><td>{{.Merged}} / {{.Windows}}</td></tr>
<tr><th>in flight</th><td>{{.InFlight}}</td></tr>
<tr><th>lost</th><td>{{.Lost}}</td></tr>
<tr><th>duplicates</th><td>{{.Duplicates}}</td></tr>
<tr><th>rejected</th><td>{{.Rejected}}</td></tr>
<tr><th>proven {{.Unit}}</th><td>{{.Proven}} / {{.Pixels}} ({{.Percent}})</td></tr>
{{if .Eliminated}}<tr><th>labels eliminated</th><td>{{.Eliminated}} (window level {{.Level}})</td></tr>{{end}}
<tr><th>elapsed</th><td>{{.Elapsed}}</td></tr>
</table>
{{with .Errors}}<h3>errors</h3>
<ul class="err">{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{with .Workers}}<h3>workers</h3>
<table>
<tr><th>name</th><th>windows</th><th>last seen</th></tr>
{{range .}}<tr><td>{{.Name}}</td><td>{{.Windows}}</td><td>{{.LastSeen}}</td></tr>
{{end}}</table>{{end}}
{{with .ImageURL}}<p><img src="{{.}}" alt="persistency map: grey = labeling, red = not proven"></p>{{end}}
</section>
{{else}}
<p>No jobs.</p>
{{end}}
</body>
</html>
`))

// ListenStatus serves h on addr (e.g. "localhost:8222"; port 0 picks one) until
// ctx ends, then shuts the server down, giving requests in progress 5 s. It returns
// once listening, with the bound address and a channel that receives the server's
// final error: nil after a clean shutdown.
func ListenStatus(ctx context.Context, addr string, h http.Handler) (net.Addr, <-chan error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("status page: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() {
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		var err error
		select {
		case err = <-served: // failed on its own
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			err = srv.Shutdown(sctx)
			cancel()
			if err != nil {
				srv.Close()
				err = fmt.Errorf("status page: shutdown: %w", err)
			}
			// Serve returned ErrServerClosed as soon as Shutdown began.
			if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
				err = serr
			}
		}
		errc <- err
		close(errc)
	}()
	return ln.Addr(), errc, nil
}
