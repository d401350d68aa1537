package redact

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"strings"
	"testing"
)

func TestURLsMasksUserinfo(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"nats://T0K@host:4222", "nats://xxxxx@host:4222"},
		{"nats://alice:pw@host:4222", "nats://alice:xxxxx@host:4222"},
		{"nats://:pw@host", "nats://:xxxxx@host"},
		{"nats://alice:p@ss@host", "nats://alice:xxxxx@host"}, // url.Parse's last @
		{"nats://T0K@[::1]:4222", "nats://xxxxx@[::1]:4222"},
		{"tls://a:pw@h1:4222,nats://T0K@h2:4222, nats://h3", "tls://a:xxxxx@h1:4222,nats://xxxxx@h2:4222, nats://h3"},
		{"nats://a:p,w@h", "nats://a:xxxxx@h"},
		{"nats://a:it's@h", "nats://a:xxxxx@h"},
		{"nats://h1,T0K@h2", "nats://xxxxx@h2"}, // NATS's second URL, without a scheme
		{"at nats://a:pw@h1 and http://u:pw@h2/x", "at nats://a:xxxxx@h1 and http://u:xxxxx@h2/x"},
		{"nats: connect to nats://a:pw@h:1: connection refused", "nats: connect to nats://a:xxxxx@h:1: connection refused"},
		{`parse "nats://a:p w@h": net/url: invalid userinfo`, `parse "nats://a:xxxxx@h": net/url: invalid userinfo`},
		{`{"err":"parse \"nats://T0K@h\": bad"}`, `{"err":"parse \"nats://xxxxx@h\": bad"}`},
		{"ws://u:pw@h/path?q=1#f", "ws://u:xxxxx@h/path?q=1#f"},
		// No userinfo: nothing changes.
		{"nats://host:4222", "nats://host:4222"},
		{"nats://@host", "nats://@host"},
		{"http://host:80/", "http://host:80/"},
		{"mailto:alice@example.org, alice@example.org", "mailto:alice@example.org, alice@example.org"},
		{"nats://alice:xxxxx@h", "nats://alice:xxxxx@h"},
		{"", ""},
		{"://", "://"},
		{"a://b://T0K@c", "a://b://xxxxx@c"},
		// More than url.Parse's userinfo, rather than less.
		{"http://host/a@b", "http://xxxxx@b"},
		{"nats://alice:ab/cd@h", "nats://alice:xxxxx@h"},
	} {
		if got := URLs(c.in); got != c.want {
			t.Errorf("URLs(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestURLMasksAGivenList: a --nats value or $NATS_URL, whatever its
// characters, has nothing left of a secret before an @.
func TestURLMasksAGivenList(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"nats://a:p w\"x@h:4222", "nats://a:xxxxx@h:4222"},
		{"alice:pw@h:4222", "alice:xxxxx@h:4222"},
		{"T0K@h:4222,nats://a:pw@h2", "xxxxx@h:4222,nats://a:xxxxx@h2"},
		{"nats://a:pw@h1, nats://T0K @h2", "nats://a:xxxxx@h1, nats://xxxxx@h2"},
		{"nats://h1:4222", "nats://h1:4222"},
		{"", ""},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestURLsMasksWhatNATSSends: the part URLs masks is the credential url.Parse
// (what nats.go parses server URLs with) finds: user and password, or the
// user alone, which NATS sends as a token.
func TestURLsMasksWhatNATSSends(t *testing.T) {
	for _, raw := range []string{"nats://T0K@h:4222", "nats://alice:pw@h:4222", "nats://alice:p@ss@h", "nats://T0K@[::1]:4222", "tls://a%40b:p%2Fw@h"} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		secret := u.User.Username()
		if pw, ok := u.User.Password(); ok {
			secret = pw
		}
		masked, err := url.Parse(URLs(raw))
		if err != nil || masked.Host != u.Host || strings.Contains(URLs(raw), secret) {
			t.Errorf("URLs(%q) = %q (%v): want the secret %q masked and the host %q kept", raw, URLs(raw), err, secret, u.Host)
		}
	}
}

func TestErrorKeepsTheChain(t *testing.T) {
	if Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
	plain := fmt.Errorf("open x: %w", fs.ErrNotExist)
	if Error(plain) != plain {
		t.Error("an error without a secret was wrapped")
	}
	err := Error(fmt.Errorf("connect to nats://alice:pw@h: %w", fs.ErrNotExist))
	if err.Error() != "connect to nats://alice:xxxxx@h: file does not exist" {
		t.Errorf("Error() = %q", err)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("errors.Is does not see through Error")
	}
	var pe *fs.PathError
	err = Error(fmt.Errorf("wrapped: %w", &fs.PathError{Op: "dial", Path: "nats://T0K@h", Err: fs.ErrPermission}))
	if !errors.As(err, &pe) || pe.Path != "nats://T0K@h" || strings.Contains(err.Error(), "T0K") {
		t.Errorf("errors.As through Error: %v, %q", pe, err)
	}
}

type stringer struct{ url string }

func (s stringer) String() string { return "server " + s.url }

type nilErr struct{}

func (*nilErr) Error() string { panic("nil receiver") }

// TestReplaceAttrMasksEveryField: through slog's own handlers, in both
// formats, the message and every kind of field that can quote a URL.
func TestReplaceAttrMasksEveryField(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var buf bytes.Buffer
		opts := &slog.HandlerOptions{ReplaceAttr: ReplaceAttr}
		var h slog.Handler = slog.NewTextHandler(&buf, opts)
		if format == "json" {
			h = slog.NewJSONHandler(&buf, opts)
		}
		log := slog.New(h).With("nats", "nats://T0K@h1:4222")
		log.WithGroup("g").Info("dialing nats://alice:PW@h2:4222",
			"err", fmt.Errorf("connect to nats://alice:PW@h3: refused"),
			"server", stringer{"nats://T0K@h4"},
			"urls", []string{"nats://alice:PW@h5"},
			"struct", struct{ URL string }{"nats://T0K@h6"},
			"n", 7, "plain", "nats://h8", "nil", (*nilErr)(nil))
		out := buf.String()
		if strings.Contains(out, "T0K") || strings.Contains(out, "PW") {
			t.Errorf("%s: a secret logged: %s", format, out)
		}
		for _, want := range []string{"nats://xxxxx@h1:4222", "dialing nats://alice:xxxxx@h2:4222", "alice:xxxxx@h3", "xxxxx@h4", "alice:xxxxx@h5", "xxxxx@h6", "nats://h8"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: no %q in %s", format, want, out)
			}
		}
	}
}

func ExampleURLs() {
	fmt.Println(URLs("nats: connect to nats://alice:s3cret@10.0.0.1:4222,nats://T0KEN@10.0.0.2:4222: refused"))
	// Output: nats: connect to nats://alice:xxxxx@10.0.0.1:4222,nats://xxxxx@10.0.0.2:4222: refused
}
