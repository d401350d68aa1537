// Package version says which partopt this is, from the build information the
// go command embeds: the module version (a tag, or "(devel)" for a build in a
// checkout) and the VCS commit, its time and whether the tree was modified.
// Reports, the version command and the build_info metric all take it from here.
//
//	v := version.Get()
//	fmt.Println(v) // v1.2.0, or (devel) 2e0214a1c9f0 2026-11-26T09:36:00Z modified
package version

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Info is a build's identity.
type Info struct {
	Version  string // module version: a tag, a pseudo-version, or "(devel)"
	Commit   string // VCS revision ("" when not built from a checkout)
	Time     string // the commit's time, RFC 3339
	Modified bool   // built from a tree with uncommitted changes
	Go       string // the Go version that built it
}

// Get reads the running binary's build information.
func Get() Info {
	info := Info{Version: "(unknown)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	return parse(bi)
}

func parse(bi *debug.BuildInfo) Info {
	info := Info{Version: bi.Main.Version, Go: bi.GoVersion}
	if info.Version == "" {
		info.Version = "(devel)" // a test binary
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is the version, then for a build from a checkout the short commit,
// its time and "modified" where the tree had changes.
func (i Info) String() string {
	parts := []string{i.Version}
	if i.Commit != "" {
		parts = append(parts, i.Commit[:min(12, len(i.Commit))])
		if i.Time != "" {
			parts = append(parts, i.Time)
		}
		if i.Modified {
			parts = append(parts, "modified")
		}
	}
	return strings.Join(parts, " ")
}
