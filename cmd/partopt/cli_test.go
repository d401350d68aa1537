package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partopt/partopt/cluster"
	"github.com/spf13/cobra"
)

// TestEveryCommandExplainsItself: every command has a long help and
// examples, and no flag's help shows its default twice.
func TestEveryCommandExplainsItself(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "help" || c.Name() == "completion" || c.Name() == cobra.ShellCompRequestCmd {
			return
		}
		if c.Long == "" || c.Example == "" {
			t.Errorf("%s: long help %v, examples %v", c.CommandPath(), c.Long != "", c.Example != "")
		}
		for _, line := range strings.Split(c.Flags().FlagUsages(), "\n") {
			if strings.Count(line, "(default") > 1 {
				t.Errorf("%s: a default shown twice: %q", c.CommandPath(), line)
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRoot(io.Discard, io.Discard))
}

// TestCompletionOffersEnumValues: shell completion knows the values of the
// enumerated flags.
func TestCompletionOffersEnumValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"solve", "m.uai", "--method", ""}, []string{"pbp", "iri", "pbp+iri", "trws", "srmp"}},
		{[]string{"submit", "m.uai", "--method", ""}, []string{"pbp", "iri", "pbp+iri"}},
		{[]string{"solve", "m.uai", "--boundary", ""}, []string{"invariant", "original"}},
		{[]string{"jobs", "--log-format", ""}, []string{"text", "json"}},
		{[]string{"worker", "--log-level", ""}, []string{"debug", "info", "warn", "error"}},
	} {
		code, out, stderr := partopt(append([]string{cobra.ShellCompRequestCmd}, c.args...)...)
		got := strings.Fields(out)
		for _, w := range c.want {
			if code != 0 || !strings.Contains(" "+strings.Join(got, " ")+" ", " "+w+" ") {
				t.Errorf("%v: exit %d, %q %s; want %q", c.args, code, out, stderr, w)
			}
		}
	}
}

// TestSecretsFromTheEnvironmentFilesAndContexts: a client reaches a server
// that demands a token with the token in NATS_TOKEN, in a file, in a nats
// CLI context or in NATS_URL — never on its command line; an authentication flag overrides
// the environment; a token and a token file together are refused.
func TestSecretsFromTheEnvironmentFilesAndContexts(t *testing.T) {
	srv, err := cluster.StartEmbedded(cluster.EmbeddedOptions{Dir: t.TempDir(), Listen: "127.0.0.1:0", Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := srv.URL()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	if err := os.MkdirAll(filepath.Join(config, "nats", "context"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(config, "nats", "context", "lab.json"), []byte(`{"url": "`+url+`", "token": "s3cret"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	const reached = "no partopt cluster" // authenticated: the server answered
	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--nats", url}, "uthorization"},
		{map[string]string{"NATS_TOKEN": "s3cret"}, []string{"--nats", url}, reached},
		{nil, []string{"--nats", url, "--token-file", tokenFile}, reached},
		{map[string]string{"NATS_CONTEXT": "lab"}, nil, reached},
		{nil, []string{"--context", "lab"}, reached},
		{map[string]string{"NATS_URL": strings.Replace(url, "://", "://s3cret@", 1)}, nil, reached},
		{map[string]string{"NATS_TOKEN": "s3cret"}, []string{"--nats", url, "--user", "u", "--password", "p"}, "uthorization"},
		{nil, []string{"--nats", url, "--token", "x", "--token-file", tokenFile}, "give one"},
	} {
		for _, k := range []string{"NATS_TOKEN", "NATS_CONTEXT", "NATS_URL"} {
			t.Setenv(k, c.env[k])
		}
		code, _, stderr := partopt(append([]string{"jobs"}, c.args...)...)
		if code != exitBadInput || !strings.Contains(stderr, c.want) {
			t.Errorf("env %v, %v: exit %d, %q; want %q", c.env, c.args, code, stderr, c.want)
		}
	}
}
