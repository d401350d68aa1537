package version

import (
	"runtime/debug"
	"testing"
)

func TestStringNamesVersionCommitAndChanges(t *testing.T) {
	for _, c := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}}, "v1.2.0"},
		{debug.BuildInfo{}, "(devel)"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "2e0214a1c9f0aa11bb22cc33dd44ee55ff667788"},
			{Key: "vcs.time", Value: "2026-11-26T09:36:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			"(devel) 2e0214a1c9f0 2026-11-26T09:36:00Z modified"},
		{debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261126093600-2e0214a1c9f0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "2e0214a1c9f0aa"}, {Key: "vcs.modified", Value: "false"}}},
			"v0.0.0-20261126093600-2e0214a1c9f0 2e0214a1c9f0"},
	} {
		if got := parse(&c.bi).String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.bi, got, c.want)
		}
	}
	if v := Get(); v.Version == "" || v.Go == "" {
		t.Errorf("Get() = %+v: no version or Go version", v)
	}
}
