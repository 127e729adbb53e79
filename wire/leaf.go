package wire

import (
	"bytes"
	"encoding"
	"errors"
	"math"
	"reflect"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// decodeLeaf reads a scalar into v after refusing null. The leaves every
// message is made of (strings, booleans, unsigned integers and the
// TextUnmarshaler types) are read here from jsontext's tokens, as json/v2
// reads them; any other kind, and any value of a kind the leaf does not
// take, goes to json/v2 itself. json/v2's per-call setup (joining options,
// looking up an arshaler) cost more than the value.
//
// WARNING: what this accepts and the errors it gives must stay json/v2's
// exactly. TestLeafAgreesWithJSONv2 and FuzzLeafAgreesWithJSONv2 compare the
// two on every leaf type of the wire's messages.
func decodeLeaf(dec *jsontext.Decoder, v reflect.Value) error {
	if err := refuseNull(dec, v.Type()); err != nil {
		return err
	}
	if handled, err := decodeLeafToken(dec, v); handled {
		return err
	}
	return decodeLeafJSON(dec, v)
}

// decodeLeafJSON hands a scalar to json/v2, which rejects wrong types,
// floats, exponents, signs and overflow for integers.
func decodeLeafJSON(dec *jsontext.Decoder, v reflect.Value) error {
	if err := json.UnmarshalDecode(dec, v.Addr().Interface(), jsonOptions); err != nil {
		return leafError(err)
	}
	return nil
}

// decodeLeafToken reads v's value when the next value's kind is the one v
// takes, and reports whether it did; otherwise it reads nothing, and
// json/v2 says what is wrong. The rules and the errors are json/v2's: a
// TextUnmarshaler takes a string and its UnmarshalText's error, an unsigned
// integer a number of digits alone (ParseUint's syntax and range errors).
func decodeLeafToken(dec *jsontext.Decoder, v reflect.Value) (bool, error) {
	t, kind := v.Type(), dec.PeekKind()
	switch {
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		if kind != '"' {
			return false, nil
		}
		return true, decodeText(dec, v)
	case t.Kind() == reflect.String && kind == '"':
		tok, err := dec.ReadToken()
		if err != nil {
			return true, leafError(err)
		}
		v.SetString(tok.String())
		return true, nil
	case t.Kind() == reflect.Bool && (kind == 't' || kind == 'f'):
		tok, err := dec.ReadToken()
		if err != nil {
			return true, leafError(err)
		}
		v.SetBool(tok.Bool())
		return true, nil
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 && kind == '0':
		val, err := dec.ReadValue()
		if err != nil {
			return true, leafError(err)
		}
		n, err := parseUint(val, t.Bits())
		if err != nil {
			return true, leafError(&json.SemanticError{GoType: t, JSONKind: '0', JSONPointer: dec.StackPointer(), Err: err})
		}
		v.SetUint(n)
		return true, nil
	}
	return false, nil
}

// decodeText reads a string and gives it to v's UnmarshalText. Its error is
// reported at the string's place, as json/v2 wraps it.
func decodeText(dec *jsontext.Decoder, v reflect.Value) error {
	val, err := dec.ReadValue()
	if err != nil {
		return leafError(err)
	}
	text := val[1 : len(val)-1] // a string without escapes, in place, as json/v2 passes it
	if bytes.IndexByte(text, '\\') >= 0 {
		if text, err = jsontext.AppendUnquote(nil, val); err != nil {
			return leafError(err)
		}
	}
	err = v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText(text)
	switch err.(type) {
	case nil:
		return nil
	case *json.SemanticError, *jsontext.SyntacticError:
		return leafError(err) // json/v2 passes these on unwrapped
	}
	if errors.Is(err, errors.ErrUnsupported) {
		err = errors.New("UnmarshalText method may not return errors.ErrUnsupported")
	}
	return leafError(&json.SemanticError{GoType: v.Type(), JSONKind: '"', JSONPointer: dec.StackPointer(), Err: err})
}

// parseUint parses a JSON number as an unsigned integer of the given bits,
// with json/v2's rules (its internal jsonwire.ParseUint): digits alone, no
// leading zero, no sign, fraction or exponent (strconv.ErrSyntax), and no
// more than bits hold (strconv.ErrRange).
func parseUint(b []byte, bits int) (uint64, error) {
	const unsafeWidth = 20 // len(fmt.Sprint(uint64(math.MaxUint64)))
	var v uint64
	var n int
	for ; len(b) > n && '0' <= b[n] && b[n] <= '9'; n++ {
		v = 10*v + uint64(b[n]-'0')
	}
	switch {
	case n == 0 || len(b) != n || (b[0] == '0' && string(b) != "0"):
		return 0, strconv.ErrSyntax
	case n >= unsafeWidth && (b[0] != '1' || v < 1e19 || n > unsafeWidth):
		return 0, strconv.ErrRange
	case bits < 64 && v > math.MaxUint64>>(64-bits):
		return 0, strconv.ErrRange
	}
	return v, nil
}
