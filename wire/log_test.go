package wire

import "testing"

// Every record a session log holds says when it was written; loopd and
// bxctl read a session's last activity from it.
func TestRecordTime(t *testing.T) {
	cases := []struct {
		r    LogRecord
		want Timestamp
	}{
		{SessionStart{Time: 1}, 1}, {User{Time: 2}, 2}, {Assistant{Time: 3}, 3},
		{ToolResult{Time: 4}, 4}, {CacheLoss{Time: 5}, 5}, {EpochEnd{Time: 6}, 6},
	}
	for _, c := range cases {
		if got := RecordTime(c.r); got != c.want {
			t.Errorf("RecordTime(%T) = %d, want %d", c.r, got, c.want)
		}
	}
}
