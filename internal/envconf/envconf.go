// Package envconf is how every vwr binary reads its settings: one parser
// (github.com/caarlos0/env/v11) used the same way everywhere, one unit
// convention, and errors that name the variable to fix.
//
// Conventions:
//   - A variable named *_SECONDS or *_MS holds a whole, positive number of
//     that unit (field types Seconds and Millis). Any other duration is Go
//     syntax, "24h" or "600s" (time.Duration).
//   - Counts that must be at least one are Positive; lists are
//     comma-separated (List).
//   - An unset or empty variable leaves its field at the zero value. The
//     package that owns a setting fills zero fields in its WithDefaults:
//     defaults live there and nowhere else.
//   - Values are trimmed of surrounding white space.
package envconf

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
)

// Environ returns the process environment as a map, for Parse.
func Environ() map[string]string { return env.ToMap(os.Environ()) }

// Parse fills the env-tagged fields of the struct dst points to from environ
// (nil means the process environment). Every malformed value is reported,
// each naming its variable.
func Parse(dst any, environ map[string]string) error {
	if environ == nil {
		environ = Environ()
	}
	trimmed := make(map[string]string, len(environ))
	for k, v := range environ {
		trimmed[k] = strings.TrimSpace(v)
	}
	err := env.ParseWithOptions(dst, env.Options{Environment: trimmed})
	if err == nil {
		return nil
	}
	names := fieldVars(reflect.TypeOf(dst))
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return err
	}
	var out []error
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			name := strings.Join(names[pe.Name], " or ")
			if name == "" {
				name = pe.Name
			}
			out = append(out, fmt.Errorf("%s: %v", name, pe.Err))
			continue
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// fieldVars maps field names to the variables they read. The parser reports
// a failed field by name only; a name shared by two nested structs maps to
// both variables.
func fieldVars(t reflect.Type) map[string][]string {
	out := map[string][]string{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if key, _, _ := strings.Cut(f.Tag.Get("env"), ","); key != "" {
				out[f.Name] = append(out[f.Name], key)
				continue
			}
			if f.Type.Kind() == reflect.Struct || (f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct) {
				walk(f.Type)
			}
		}
	}
	walk(t)
	return out
}

func positive(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("want a whole number of at least 1, got %q", s)
	}
	return n, nil
}

// Seconds is a duration set as a whole number of seconds (*_SECONDS).
type Seconds time.Duration

// UnmarshalText reads a positive whole number of seconds.
func (s *Seconds) UnmarshalText(b []byte) error { return setUnits((*time.Duration)(s), b, time.Second) }

// D is the duration (0 when unset).
func (s Seconds) D() time.Duration { return time.Duration(s) }

// Millis is a duration set as a whole number of milliseconds (*_MS).
type Millis time.Duration

// UnmarshalText reads a positive whole number of milliseconds.
func (m *Millis) UnmarshalText(b []byte) error {
	return setUnits((*time.Duration)(m), b, time.Millisecond)
}

// D is the duration (0 when unset).
func (m Millis) D() time.Duration { return time.Duration(m) }

func setUnits(dst *time.Duration, b []byte, unit time.Duration) error {
	n, err := positive(string(b))
	if err != nil {
		return err
	}
	*dst = time.Duration(n) * unit
	return nil
}

// Positive is a whole number that, when set, is at least 1.
type Positive int64

// UnmarshalText reads a whole number ≥ 1.
func (p *Positive) UnmarshalText(b []byte) error {
	n, err := positive(string(b))
	if err != nil {
		return err
	}
	*p = Positive(n)
	return nil
}

// List is a comma-separated list; items are trimmed and empty ones dropped.
type List []string

// UnmarshalText splits on commas.
func (l *List) UnmarshalText(b []byte) error {
	*l = nil
	for _, p := range strings.Split(string(b), ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}
