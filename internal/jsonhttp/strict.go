package jsonhttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// DecodeStrict decodes one JSON object into the struct v points to and
// refuses what encoding/json would quietly accept: unknown keys, keys that
// differ from a field's name only in case ({"THRESHOLD":5}), a key given
// twice, anything but an object at the top, and trailing data after it. A
// lenient decoder would store a value the client did not mean to send.
func DecodeStrict(b []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return errors.New("jsonhttp: DecodeStrict needs a pointer to a struct")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := checkValue(dec, t.Elem(), true); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("jsonhttp: trailing data after the JSON object")
	}
	dec = json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("jsonhttp: %w", err)
	}
	return nil
}

// checkValue walks the next JSON value. Objects are checked for repeated
// keys (also case-insensitively, since encoding/json matches keys that way)
// and, where the target is a struct, for keys that are exactly a field name.
func checkValue(dec *json.Decoder, target reflect.Type, top bool) error {
	for target != nil && target.Kind() == reflect.Pointer {
		target = target.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("jsonhttp: %w", err)
	}
	delim, isDelim := tok.(json.Delim)
	if top && (!isDelim || delim != '{') {
		return errors.New("jsonhttp: body must be a JSON object")
	}
	if !isDelim {
		return nil
	}
	switch delim {
	case '[':
		var elem reflect.Type
		if target != nil && (target.Kind() == reflect.Slice || target.Kind() == reflect.Array) {
			elem = target.Elem()
		}
		for dec.More() {
			if err := checkValue(dec, elem, false); err != nil {
				return err
			}
		}
	case '{':
		var fields map[string]reflect.Type
		if target != nil && target.Kind() == reflect.Struct {
			fields = jsonFields(target)
		}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return fmt.Errorf("jsonhttp: %w", err)
			}
			key, _ := kt.(string)
			folded := strings.ToLower(key)
			if seen[folded] {
				return fmt.Errorf("jsonhttp: key %q given twice", key)
			}
			seen[folded] = true
			var ft reflect.Type
			if fields != nil {
				var ok bool
				if ft, ok = fields[key]; !ok {
					return fmt.Errorf("jsonhttp: unknown key %q", key)
				}
			}
			if err := checkValue(dec, ft, false); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	if err != nil {
		return fmt.Errorf("jsonhttp: %w", err)
	}
	return nil
}

// jsonFields maps the exact JSON names of t's exported fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
