package wire

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The codec splits the work with json/v2: jsontext reads and writes the JSON
// text (strict UTF-8, no duplicate names, canonical escaping) and json/v2
// converts leaves (strings, booleans, integers, the TextMarshaler types), while
// this file walks structs and tagged unions itself. That is where the rules
// json/v2 does not have live: every member is required, null only fills a
// pointer (an Option), and unknown members are errors.

// jsonOptions are the syntax and semantics every frame and record uses.
var jsonOptions = json.JoinOptions(
	jsontext.AllowDuplicateNames(false),
	jsontext.AllowInvalidUTF8(false),
	jsontext.EscapeForHTML(false),
	jsontext.EscapeForJS(false),
	json.RejectUnknownMembers(true),
)

var textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()

// field is one member of a wire struct, in declared order.
type field struct {
	name  string
	index int
}

var fieldCache sync.Map // reflect.Type -> []field

// fieldsOf lists t's JSON members. Every exported field of a wire struct is a
// member named by its json tag; a field without a tag is a programming error.
func fieldsOf(t reflect.Type) []field {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]field)
	}
	var fields []field
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" {
			panic(fmt.Sprintf("wire: %s.%s has no json tag", t, sf.Name))
		}
		fields = append(fields, field{name: name, index: i})
	}
	f, _ := fieldCache.LoadOrStore(t, fields)
	return f.([]field)
}

// decodeValue reads one JSON value from dec into v, which must be addressable.
func decodeValue(dec *jsontext.Decoder, v reflect.Value) error {
	t := v.Type()
	if u, ok := unionFor(t); ok {
		if err := refuseNull(dec, t); err != nil {
			return err
		}
		return u.decode(dec, v)
	}
	switch {
	case t.Kind() == reflect.Pointer:
		if dec.PeekKind() == 'n' {
			_, err := dec.ReadToken()
			v.SetZero()
			return err
		}
		elem := reflect.New(t.Elem())
		if err := decodeValue(dec, elem.Elem()); err != nil {
			return err
		}
		v.Set(elem)
		return nil
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		return decodeLeaf(dec, v)
	case t.Kind() == reflect.Struct:
		return decodeStruct(dec, v, "")
	case t.Kind() == reflect.Slice:
		return decodeSlice(dec, v)
	default:
		return decodeLeaf(dec, v)
	}
}

func refuseNull(dec *jsontext.Decoder, t reflect.Type) error {
	if dec.PeekKind() == 'n' {
		return badMessage("null at %s where %s is required", pointerOrTop(dec), typeWord(t))
	}
	return nil
}

// decodeStruct reads an object into the struct v: every member required, none
// unknown. skip names a member already consumed by a union (its tag).
func decodeStruct(dec *jsontext.Decoder, v reflect.Value, skip string) error {
	if err := expectKind(dec, '{', v.Type()); err != nil {
		return err
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	return decodeMembers(dec, v, skip)
}

// decodeMembers reads the rest of an object whose '{' (and perhaps some
// members a union consumed) has been read, up to and including its '}'.
func decodeMembers(dec *jsontext.Decoder, v reflect.Value, skip string) error {
	fields := fieldsOf(v.Type())
	seen := make([]bool, len(fields))
	for dec.PeekKind() != '}' {
		name, err := readName(dec)
		if err != nil {
			return err
		}
		if name == skip && skip != "" {
			if err := dec.SkipValue(); err != nil {
				return err
			}
			continue
		}
		i := indexOf(fields, name)
		if i < 0 {
			return badMessage("unknown field %q", name)
		}
		seen[i] = true
		if err := decodeValue(dec, v.Field(fields[i].index)); err != nil {
			return err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for i, ok := range seen {
		if !ok {
			return badMessage("missing field %q at %s", fields[i].name, pointerOrTop(dec))
		}
	}
	return nil
}

func decodeSlice(dec *jsontext.Decoder, v reflect.Value) error {
	if err := expectKind(dec, '[', v.Type()); err != nil {
		return err
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	v.SetLen(0)
	for dec.PeekKind() != ']' {
		elem := reflect.New(v.Type().Elem()).Elem()
		if err := decodeValue(dec, elem); err != nil {
			return err
		}
		v.Set(reflect.Append(v, elem))
	}
	_, err := dec.ReadToken()
	if v.IsNil() {
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
	}
	return err
}

// expectKind checks that the next value is of kind want ('{' or '['),
// naming the place when it is not.
func expectKind(dec *jsontext.Decoder, want jsontext.Kind, t reflect.Type) error {
	switch kind := dec.PeekKind(); kind {
	case want:
		return nil
	case 'n':
		return refuseNull(dec, t)
	case 0: // a syntax error or the end: reading says which
		_, err := dec.ReadToken()
		return err
	default:
		return badMessage("%s must be %s", pointerOrTop(dec), typeWord(t))
	}
}

func readName(dec *jsontext.Decoder) (string, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return "", err
	}
	return tok.String(), nil
}

func indexOf(fields []field, name string) int {
	for i, f := range fields {
		if f.name == name {
			return i
		}
	}
	return -1
}

// encodeValue writes v canonically: struct members in declared order, Options
// as null, unions with their tag first.
func encodeValue(enc *jsontext.Encoder, v reflect.Value) error {
	t := v.Type()
	if u, ok := unionFor(t); ok {
		return u.encode(enc, v)
	}
	switch {
	case t.Kind() == reflect.Pointer:
		if v.IsNil() {
			return enc.WriteToken(jsontext.Null)
		}
		return encodeValue(enc, v.Elem())
	// Leaves are written as tokens, as json/v2 writes them (the same
	// escaping and UTF-8 check), without its per-call setup: the audit
	// writer encodes every record through here.
	case t.Implements(textMarshalerType):
		text, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return err
		}
		return enc.WriteToken(jsontext.String(string(text)))
	case t.Kind() == reflect.String:
		return enc.WriteToken(jsontext.String(v.String()))
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
		return enc.WriteToken(jsontext.Uint(v.Uint()))
	case t.Kind() == reflect.Struct:
		return encodeStruct(enc, v, "", "")
	case t.Kind() == reflect.Slice:
		if err := enc.WriteToken(jsontext.BeginArray); err != nil {
			return err
		}
		for i := range v.Len() {
			if err := encodeValue(enc, v.Index(i)); err != nil {
				return err
			}
		}
		return enc.WriteToken(jsontext.EndArray)
	default:
		return json.MarshalEncode(enc, v.Interface(), jsonOptions)
	}
}

var textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()

// encodeStruct writes the struct v as an object, led by the member
// tagName:tag when tagName is set.
func encodeStruct(enc *jsontext.Encoder, v reflect.Value, tagName, tag string) error {
	if err := enc.WriteToken(jsontext.BeginObject); err != nil {
		return err
	}
	if tagName != "" {
		if err := writeMember(enc, tagName, jsontext.String(tag)); err != nil {
			return err
		}
	}
	for _, f := range fieldsOf(v.Type()) {
		if err := enc.WriteToken(jsontext.String(f.name)); err != nil {
			return err
		}
		if err := encodeValue(enc, v.Field(f.index)); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return enc.WriteToken(jsontext.EndObject)
}

func writeMember(enc *jsontext.Encoder, name string, value jsontext.Token) error {
	if err := enc.WriteToken(jsontext.String(name)); err != nil {
		return err
	}
	return enc.WriteToken(value)
}

// newDecoder reads b in place: jsontext parses a bytes.Buffer without
// copying. The decoder comes from a pool, as the encoders do: setting one up
// (its buffers, its name sets, the options) cost more than decoding a small
// message. release gives it back once nothing read from it is used.
func newDecoder(b []byte) *pooledDecoder {
	d := decoders.Get().(*pooledDecoder)
	d.src = *bytes.NewBuffer(b)
	d.Reset(&d.src, jsonOptions)
	return d
}

// pooledDecoder is a decoder kept between calls with the buffer it reads.
type pooledDecoder struct {
	jsontext.Decoder
	src bytes.Buffer
}

// release returns d to the pool, letting go of the bytes it read: Reset
// drops a buffer that aliases a bytes.Buffer's.
func (d *pooledDecoder) release() {
	d.src = bytes.Buffer{}
	d.Reset(&d.src)
	decoders.Put(d)
}

var decoders = sync.Pool{New: func() any { return new(pooledDecoder) }}

// decodeTop decodes payload, one complete JSON value and nothing after it, into v.
func decodeTop(payload []byte, v any) error {
	d := newDecoder(payload)
	defer d.release()
	dec := &d.Decoder
	if err := decodeValue(dec, reflect.ValueOf(v).Elem()); err != nil {
		return asBadMessage(err)
	}
	if _, err := dec.ReadToken(); err == nil {
		return badMessage("data after the value")
	} else if !errors.Is(err, io.EOF) {
		return asBadMessage(err)
	}
	return nil
}

// encodeTop encodes v canonically, without the newline jsontext appends.
func encodeTop(v any) ([]byte, error) {
	e := encoders.Get().(*pooledEncoder)
	e.buf.Reset()
	e.enc.Reset(&e.buf, jsonOptions)
	if err := encodeValue(e.enc, reflect.ValueOf(v).Elem()); err != nil {
		encoders.Put(e)
		return nil, fmt.Errorf("wire: encode: %w", err)
	}
	out := bytes.TrimSuffix(e.buf.Bytes(), []byte("\n"))
	if e.buf.Cap() > 64<<10 {
		return out, nil // a buffer grown for a large frame goes with it
	}
	out = bytes.Clone(out)
	encoders.Put(e)
	return out, nil
}

// pooledEncoder is an encoder kept between calls, with its buffer and its
// record of member names: setting them up anew cost more than the encoding
// of a small message.
type pooledEncoder struct {
	buf bytes.Buffer
	enc *jsontext.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &pooledEncoder{}
	e.enc = jsontext.NewEncoder(&e.buf, jsonOptions)
	return e
}}

// asBadMessage turns a syntax or conversion error into a bad_message error
// whose detail names the place, without Go type names.
func asBadMessage(err error) error {
	var we WireError
	if errors.As(err, &we) {
		return we
	}
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		return badMessage("invalid JSON at byte %d: %v", se.ByteOffset, se.Err)
	}
	if errors.Is(err, io.EOF) {
		return badMessage("JSON ends early")
	}
	return badMessage("%v", err)
}

func leafError(err error) error {
	var se *json.SemanticError
	if errors.As(err, &se) {
		detail := "wrong type"
		if se.Err != nil {
			detail = se.Err.Error()
		}
		return badMessage("invalid value %s at %s: %s", se.JSONKind, pointerText(se.JSONPointer), detail)
	}
	return asBadMessage(err)
}

func pointerOrTop(dec *jsontext.Decoder) string { return pointerText(dec.StackPointer()) }

func pointerText(p jsontext.Pointer) string {
	if p == "" {
		return "the top level"
	}
	return string(p)
}

func typeWord(t reflect.Type) string {
	switch {
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		return "a string"
	case t.Kind() == reflect.Slice:
		return "an array"
	case t.Kind() == reflect.Struct:
		return "an object"
	case t.Kind() == reflect.Interface:
		return "an object"
	case t.Kind() == reflect.Bool:
		return "a boolean"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "a number"
	default:
		return "a string"
	}
}

// Marshal encodes v, a pointer to a struct of wire types, canonically. It is
// for the small contracts between roles that travel outside frames (a tool
// job on a sandbox's stdin, a state file), so that they follow the same
// rules as the frames.
func Marshal(v any) ([]byte, error) {
	if err := checkPointer(v); err != nil {
		return nil, err
	}
	return encodeTop(v)
}

// Unmarshal decodes data into v, a pointer, with the strictness of Decode:
// every member required, none unknown, null only in pointers.
func Unmarshal(data []byte, v any) error {
	if err := checkPointer(v); err != nil {
		return err
	}
	return decodeTop(data, v)
}

func checkPointer(v any) error {
	if rv := reflect.ValueOf(v); rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("wire: need a non-nil pointer, not %T", v)
	}
	return nil
}
