package wire

import (
	"errors"
	"fmt"
)

// ErrorCode says which rule of the protocol a frame broke.
type ErrorCode string

const (
	// BadFrame: the length prefix was 0 or over MaxFrame; the body was not read.
	BadFrame ErrorCode = "bad_frame"
	// BadVersion: the envelope's v was an integer other than Version.
	BadVersion ErrorCode = "bad_version"
	// BadMessage: the frame was read whole but is not a valid envelope.
	BadMessage ErrorCode = "bad_message"
	// Internal: the peer failed for a reason of its own.
	Internal ErrorCode = "internal"
)

var errorCodes = []ErrorCode{BadFrame, BadVersion, BadMessage, Internal}

// MarshalText refuses a code outside the protocol's set.
func (c ErrorCode) MarshalText() ([]byte, error) {
	if err := checkEnum(string(c), errorCodes); err != nil {
		return nil, fmt.Errorf("error code: %w", err)
	}
	return []byte(c), nil
}

// UnmarshalText accepts exactly one of the protocol's codes.
func (c *ErrorCode) UnmarshalText(b []byte) error {
	if err := checkEnum(string(b), errorCodes); err != nil {
		return fmt.Errorf("error code: %w", err)
	}
	*c = ErrorCode(b)
	return nil
}

// WireError is the body of an error message and also the Go error the codec
// returns, so that a reader's error becomes the reply without translation.
type WireError struct {
	Code   ErrorCode `json:"code"`
	Detail string    `json:"detail"`
}

func (e WireError) Error() string {
	if e.Detail == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Detail
}

// Is reports whether target is the sentinel for e's code, so that
// errors.Is(err, ErrBadFrame) holds for every bad_frame error.
func (e WireError) Is(target error) bool {
	t, ok := target.(WireError)
	return ok && t.Detail == "" && t.Code == e.Code
}

// Sentinels for errors.Is; the errors the codec returns carry a detail as well.
var (
	ErrBadFrame   = WireError{Code: BadFrame}
	ErrBadVersion = WireError{Code: BadVersion}
	ErrBadMessage = WireError{Code: BadMessage}
)

// CodeOf says which error code answers err: the code of a WireError in its
// chain, or Internal for anything else. CodeOf(nil) is "".
func CodeOf(err error) ErrorCode {
	if err == nil {
		return ""
	}
	var we WireError
	if errors.As(err, &we) {
		return we.Code
	}
	return Internal
}

func badMessage(format string, args ...any) error {
	return WireError{Code: BadMessage, Detail: fmt.Sprintf(format, args...)}
}

func checkEnum[T ~string](s string, valid []T) error {
	for _, v := range valid {
		if string(v) == s {
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %v", s, valid)
}
