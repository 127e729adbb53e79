package wire

import (
	"fmt"
	"reflect"

	"github.com/go-json-experiment/json/jsontext"
)

// A union is a closed set of Go types behind one interface, told apart on the
// wire by a tag. Internally tagged unions put the tag among the variant's own
// members ({"status":"denied","reason":...}); the adjacently tagged Message
// puts the variant under a second member ({"kind":...,"body":{...}}).
type union struct {
	iface    reflect.Type
	tagName  string // "status", "outcome", "type", or "kind"
	bodyName string // "body" for an adjacent union, else ""
	tags     []string
	types    []reflect.Type // a variant may itself be a union's interface
}

// variant pairs a tag with a zero value of its type; for a variant that is
// itself a union, the zero value is a typed nil pointer to its interface.
type variant struct {
	tag  string
	zero any
}

func newUnion[I any](tagName, bodyName string, variants ...variant) *union {
	u := &union{iface: reflect.TypeFor[I](), tagName: tagName, bodyName: bodyName}
	for _, v := range variants {
		t := reflect.TypeOf(v.zero)
		if t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Interface {
			t = t.Elem()
		}
		if !t.Implements(u.iface) && t != u.iface {
			panic(fmt.Sprintf("wire: %s does not implement %s", t, u.iface))
		}
		u.tags = append(u.tags, v.tag)
		u.types = append(u.types, t)
	}
	return u
}

// unionFor returns the union whose interface is t.
func unionFor(t reflect.Type) (*union, bool) {
	if t.Kind() != reflect.Interface {
		return nil, false
	}
	for _, u := range unions {
		if u.iface == t {
			return u, true
		}
	}
	return nil, false
}

// tagOf returns the tag and the declared variant type that the concrete type t falls under.
func (u *union) tagOf(t reflect.Type) (string, reflect.Type, bool) {
	for i, vt := range u.types {
		if vt == t || vt.Kind() == reflect.Interface && t.Implements(vt) {
			return u.tags[i], vt, true
		}
	}
	return "", nil, false
}

func (u *union) typeOf(tag string) (reflect.Type, bool) {
	for i, s := range u.tags {
		if s == tag {
			return u.types[i], true
		}
	}
	return nil, false
}

// decode reads one variant into v, a value of the union's interface type.
func (u *union) decode(dec *jsontext.Decoder, v reflect.Value) error {
	if err := expectKind(dec, '{', u.iface); err != nil {
		return err
	}
	raw, err := dec.ReadValue()
	if err != nil {
		return err
	}
	elem, ok, err := u.decodeTagFirst(raw)
	if !ok && err == nil {
		elem, err = u.decodeAnyOrder(raw)
	}
	if err != nil {
		return err
	}
	v.Set(elem)
	return nil
}

// decodeTagFirst decodes raw in one pass when the tag is its first member,
// as the canonical encoding writes it. ok is false when it is not.
func (u *union) decodeTagFirst(raw jsontext.Value) (elem reflect.Value, ok bool, err error) {
	d := newDecoder(raw)
	defer d.release()
	dec := &d.Decoder
	if _, err := dec.ReadToken(); err != nil {
		return elem, false, err
	}
	if dec.PeekKind() != '"' {
		return elem, false, nil
	}
	if name, err := readName(dec); err != nil || name != u.tagName {
		return elem, false, err
	}
	t, err := u.readTag(dec)
	if err != nil {
		return elem, true, err
	}
	elem = reflect.New(t).Elem()
	if u.bodyName == "" {
		return elem, true, decodeMembers(dec, elem, "")
	}
	if dec.PeekKind() != '"' {
		return elem, false, nil
	}
	if name, err := readName(dec); err != nil || name != u.bodyName {
		return elem, false, err
	}
	if err := decodeValue(dec, elem); err != nil {
		return elem, true, err
	}
	if dec.PeekKind() != '}' {
		return elem, false, nil
	}
	return elem, true, nil
}

// readTag reads the tag's value and returns the variant type it names.
func (u *union) readTag(dec *jsontext.Decoder) (reflect.Type, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	if tok.Kind() != '"' {
		return nil, badMessage("%s must be a string", u.tagName)
	}
	t, ok := u.typeOf(tok.String())
	if !ok {
		return nil, badMessage("unknown %s %q", u.tagName, tok.String())
	}
	return t, nil
}

// decodeAnyOrder decodes raw whose tag is not its first member.
func (u *union) decodeAnyOrder(raw jsontext.Value) (reflect.Value, error) {
	t, body, err := u.split(raw)
	if err != nil {
		return reflect.Value{}, err
	}
	elem := reflect.New(t).Elem()
	sub := newDecoder(body)
	defer sub.release()
	if u.bodyName == "" {
		err = decodeStruct(&sub.Decoder, elem, u.tagName)
	} else {
		err = decodeValue(&sub.Decoder, elem)
	}
	return elem, err
}

// split finds the variant type and the bytes the variant decodes from: raw
// itself for an internal tag (the tag member is skipped later), the body
// member for an adjacent one.
func (u *union) split(raw jsontext.Value) (t reflect.Type, body jsontext.Value, err error) {
	d := newDecoder(raw)
	defer d.release()
	dec := &d.Decoder
	if _, err := dec.ReadToken(); err != nil {
		return nil, nil, err
	}
	for dec.PeekKind() != '}' {
		name, err := readName(dec)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case name == u.tagName:
			if t, err = u.readTag(dec); err != nil {
				return nil, nil, err
			}
		case name == u.bodyName:
			v, err := dec.ReadValue()
			if err != nil {
				return nil, nil, err
			}
			body = v.Clone() // ReadValue's bytes last only until the next read
		case u.bodyName != "":
			return nil, nil, badMessage("unknown field %q", name)
		default:
			if err := dec.SkipValue(); err != nil {
				return nil, nil, err
			}
		}
	}
	if t == nil {
		return nil, nil, badMessage("missing field %q", u.tagName)
	}
	if u.bodyName == "" {
		return t, raw, nil
	}
	if body == nil {
		return nil, nil, badMessage("missing field %q", u.bodyName)
	}
	return t, body, nil
}

// encode writes v, a value of the union's interface type.
func (u *union) encode(enc *jsontext.Encoder, v reflect.Value) error {
	if v.IsNil() {
		return fmt.Errorf("no %s value", u.iface.Name())
	}
	concrete := v.Elem()
	tag, vt, ok := u.tagOf(concrete.Type())
	if !ok {
		return fmt.Errorf("%s is not a %s", concrete.Type(), u.iface.Name())
	}
	if u.bodyName == "" {
		return encodeStruct(enc, concrete, u.tagName, tag)
	}
	if err := enc.WriteToken(jsontext.BeginObject); err != nil {
		return err
	}
	if err := writeMember(enc, u.tagName, jsontext.String(tag)); err != nil {
		return err
	}
	if err := enc.WriteToken(jsontext.String(u.bodyName)); err != nil {
		return err
	}
	// Re-box the body under its declared type, so a body that is itself a
	// union is written through that union.
	body := reflect.New(vt).Elem()
	body.Set(concrete)
	if err := encodeValue(enc, body); err != nil {
		return err
	}
	return enc.WriteToken(jsontext.EndObject)
}
