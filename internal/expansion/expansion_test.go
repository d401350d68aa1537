package expansion

import "testing"

func TestBudget(t *testing.T) {
	for _, c := range []struct{ size, want int64 }{
		{0, Slack},
		{-1, Slack}, // a size nobody stated allows only the slack
		{1 << 20, 128<<20 + Slack},
		{10 << 30, 1280<<30 + Slack},
	} {
		if got := Budget(c.size); got != c.want {
			t.Errorf("Budget(%d) = %d, want %d", c.size, got, c.want)
		}
	}
}
