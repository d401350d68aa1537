// Package redact keeps the credentials of URLs out of what partopt writes:
// the password of a user (nats://alice:PASSWORD@host) and a token
// (nats://TOKEN@host, NATS's form) become Mask wherever a URL appears in a
// string, an error or a log event.
//
// It works at the edges. What names a URL it was given names URL(u); what
// writes a text that may quote URLs writes URLs(s); what returns an error
// that may quote one returns Error(err); every logger is built with
// ReplaceAttr, so no event of any process — raft's included — carries a
// secret even when a field or a message quotes a URL:
//
//	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{ReplaceAttr: redact.ReplaceAttr}))
//	nc, err := nats.Connect(url)
//	if err != nil {
//		return fmt.Errorf("connect to %s: %w", redact.URL(url), redact.Error(err))
//	}
//	log.Info("connected", "nats", nc.ConnectedUrl()) // nats=nats://alice:xxxxx@host:4222
package redact

import (
	"fmt"
	"log/slog"
	"strings"
	"unicode"
)

// Mask is what stands for a secret: what url.URL.Redacted writes for a
// password.
const Mask = "xxxxx"

// URLs returns s, a text, with the userinfo of every URL in it
// (scheme://USERINFO@host) masked: user:password becomes user:xxxxx, a
// userinfo without a colon (NATS's token) becomes xxxxx. A URL ends at white
// space, a double quote or a backslash (JSON's escaped quote) — at the closing
// quote only when a double quote opens it, as Go's %q quotes a URL that does
// not parse — or where the next URL starts; its userinfo runs from the scheme
// to its last @. That masks more than url.Parse's userinfo when an @ follows
// a / (the path of http://host/a@b), never less.
func URLs(s string) string { return mask(s, false) }

// URL returns u, a URL or a comma-separated list of them as a user gave it
// (a --nats flag, $NATS_URL), masked as URLs masks a text, but with the URLs
// ending only where the next starts: a secret with white space or quotes in
// it (which no URL may hold unescaped) is masked too. A part without a scheme
// (alice:pw@host, NATS's shorthand) is masked up to its @ as well.
func URL(u string) string { return mask(u, true) }

// mask masks the userinfo of the URLs of s: a text, or (whole) a given URL
// list.
func mask(s string, whole bool) string {
	at := strings.IndexByte(s, '@')
	if at < 0 {
		return s
	}
	var b strings.Builder
	// A userinfo starts after a scheme's "://" — or at the start of a given
	// list whose first URL has no scheme.
	start := strings.Index(s, "://")
	switch {
	case whole && (start < 0 || start > at):
		start = 0
	case start >= 0:
		start += len("://")
	}
	for start >= 0 {
		b.WriteString(s[:start])
		s = s[start:]
		next := strings.Index(s, "://")
		end := next
		if end < 0 {
			end = len(s)
		}
		if !whole {
			stop := "\\\" \t\r\n\v\f"
			if quoted(b.String()) {
				stop = "\\\"\n"
			}
			if i := strings.IndexAny(s[:end], stop); i >= 0 {
				end = i
			}
		}
		if at := strings.LastIndexByte(s[:end], '@'); at > 0 { // not none, nor empty
			if user, _, ok := strings.Cut(s[:at], ":"); ok && !strings.ContainsAny(user, "/?#,") {
				b.WriteString(user + ":" + Mask)
			} else {
				b.WriteString(Mask)
			}
			s, next = s[at:], next-at
		}
		start = -1
		if next >= 0 {
			start = next + len("://")
		}
	}
	b.WriteString(s)
	return b.String()
}

// quoted says whether the URL whose "scheme://" ends text opens with a
// double quote.
func quoted(text string) bool {
	text = strings.TrimSuffix(text, "://")
	scheme := strings.TrimRightFunc(text, func(r rune) bool {
		return r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '+' || r == '-' || r == '.')
	})
	return strings.HasSuffix(scheme, `"`)
}

// Error returns err with the URLs of its message masked as URLs does: err
// itself when its message holds no secret (nil for nil), else an error whose
// Error is the masked message and which unwraps to err, so that errors.Is
// and errors.As see through it.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if masked := URLs(msg); masked != msg {
		return &redacted{err: err, msg: masked}
	}
	return err
}

type redacted struct {
	err error
	msg string
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }

// ReplaceAttr is a slog.HandlerOptions.ReplaceAttr that masks the URLs of
// every event's message and of every field: strings, errors, Stringers and
// other values as they would print. A field without a URL is left as it is.
func ReplaceAttr(_ []string, a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindString:
		if s := a.Value.String(); strings.Contains(s, "://") {
			a.Value = slog.StringValue(URLs(s))
		}
	case slog.KindAny:
		if s := text(a.Value.Any()); strings.Contains(s, "://") {
			if masked := URLs(s); masked != s {
				a.Value = slog.StringValue(masked)
			}
		}
	}
	return a
}

// text is v as a handler prints it ("" when that panics, as a nil pointer's
// method may: the handler then reports the panic itself).
func text(v any) (s string) {
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	switch v := v.(type) {
	case error:
		return v.Error()
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprintf("%+v", v)
}
