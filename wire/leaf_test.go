package wire

import (
	"fmt"
	"reflect"
	"testing"
)

// leafTypes walks every message, result, event, decision and log record
// type and returns the leaf types their members are made of, with the
// envelope's own.
func leafTypes() []reflect.Type {
	seen := map[reflect.Type]bool{}
	var leaves []reflect.Type
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		if seen[t] {
			return
		}
		seen[t] = true
		if u, ok := unionFor(t); ok {
			for _, vt := range u.types {
				walk(vt)
			}
			return
		}
		switch {
		case t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice:
			walk(t.Elem())
		case reflect.PointerTo(t).Implements(textUnmarshalerType):
			leaves = append(leaves, t)
		case t.Kind() == reflect.Struct:
			for _, f := range fieldsOf(t) {
				walk(t.Field(f.index).Type)
			}
		default:
			leaves = append(leaves, t)
		}
	}
	walk(reflect.TypeFor[envelopeJSON]())
	for _, u := range unions {
		walk(u.iface)
	}
	return leaves
}

// leafValues are JSON values of every kind, right and wrong for the leaves:
// their strings, names, hashes, times and numbers at and past each width.
var leafValues = []string{
	`""`, `"s1"`, `"bench"`, `"a\"b\\c"`, `"\u00e9\n"`, `"caf\u00e9"`, `"\ud800"`, `"\ud83d\ude00"`,
	`"denied"`, `"approved"`, `"public"`, `"private"`, `"secret"`, `"internal"`, `"bad_message"`,
	`"manual"`, `"schedule"`, `"ok"`, `"approval_expired"`, `"no_grant"`, `"chat-2026-09-17"`,
	`"2026-12-01T10:00:00.000Z"`, `"2026-12-01T10:00:00Z"`, `"1970-01-01T00:00:00.000Z"`,
	`"` + fmt.Sprintf("%064x", 1) + `"`, `"` + fmt.Sprintf("%064X", 1) + `"`, `"` + fmt.Sprintf("%063x", 1) + `"`,
	`0`, `1`, `7`, `-0`, `-1`, `01`, `1.0`, `1.5`, `1e3`, `1E3`, `0.0`,
	`127`, `128`, `255`, `256`, `65535`, `65536`, `4294967295`, `4294967296`,
	`9223372036854775807`, `18446744073709551615`, `18446744073709551616`, `99999999999999999999`,
	`100000000000000000000`, `18446744073709551615.5`,
	`true`, `false`, `null`, `{}`, `[]`, `[1]`, `{"a":1}`,
	`tru`, `"unterminated`, "\"\x01\"", "\"\xff\"", `"\x"`, ``, `,`, `}`,
}

// Each leaf of every message decodes through jsontext's tokens exactly as
// through json/v2: the same value, the same error text, and the decoder
// left at the same place. A value of the wrong kind goes to json/v2 itself.
func TestLeafAgreesWithJSONv2(t *testing.T) {
	types := leafTypes()
	if len(types) < 10 {
		t.Fatalf("found only %d leaf types: %v", len(types), types)
	}
	for _, lt := range types {
		for _, v := range leafValues {
			if msg := leafDisagreement(lt, v); msg != "" {
				t.Error(msg)
			}
		}
	}
}

// FuzzLeafAgreesWithJSONv2 is TestLeafAgreesWithJSONv2 over any value.
func FuzzLeafAgreesWithJSONv2(f *testing.F) {
	for _, v := range leafValues {
		f.Add(v)
	}
	types := leafTypes()
	f.Fuzz(func(t *testing.T, v string) {
		for _, lt := range types {
			if msg := leafDisagreement(lt, v); msg != "" {
				t.Fatal(msg)
			}
		}
	})
}

// leafDisagreement decodes value as a member of an object into a leaf of
// type lt, through decodeLeaf and through json/v2 alone, and says how the
// two differ ("" when they agree).
func leafDisagreement(lt reflect.Type, value string) string {
	type outcome struct {
		value any
		err   string
		next  string // what the decoder reads after the leaf
	}
	run := func(decode func(d *pooledDecoder, v reflect.Value) error) outcome {
		d := newDecoder([]byte(`{"m":` + value + `}`))
		defer d.release()
		if _, err := d.ReadToken(); err != nil {
			return outcome{err: "no object: " + err.Error()}
		}
		if _, err := d.ReadToken(); err != nil {
			return outcome{err: "no name: " + err.Error()}
		}
		v := reflect.New(lt).Elem()
		var o outcome
		if err := decode(d, v); err != nil {
			o.err = err.Error()
		}
		o.value = v.Interface()
		tok, err := d.ReadToken()
		o.next = fmt.Sprint(tok, err)
		return o
	}
	fast := run(func(d *pooledDecoder, v reflect.Value) error { return decodeLeaf(&d.Decoder, v) })
	slow := run(func(d *pooledDecoder, v reflect.Value) error {
		if err := refuseNull(&d.Decoder, v.Type()); err != nil {
			return err
		}
		return decodeLeafJSON(&d.Decoder, v)
	})
	if !reflect.DeepEqual(fast, slow) {
		return fmt.Sprintf("%s from %q:\n tokens  %+v\n json/v2 %+v", lt, value, fast, slow)
	}
	return ""
}
