package brokerd

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRedact(t *testing.T) {
	got := redact("key sk-abc123 and sk-abc and sk-abc123x", []string{"sk-abc", "sk-abc123", ""})
	if want := "key [redacted] and [redacted] and [redacted]x"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestTruncateOnRuneBoundary(t *testing.T) {
	s := strings.Repeat("é", 10) // 2 bytes each
	for max := 0; max <= 21; max++ {
		got, cut := truncate(s, max)
		if !utf8.ValidString(got) || len(got) > max || cut != (max < 20) || len(got) < max-1 {
			t.Errorf("max %d: %q (%d bytes), truncated %v", max, got, len(got), cut)
		}
	}
	if got, _ := truncate("a\xffb", 10); got != "a\uFFFDb" {
		t.Errorf("invalid UTF-8 kept: %q", got)
	}
}
