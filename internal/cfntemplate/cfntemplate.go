// Package cfntemplate reads CloudFormation and SAM templates for vwr's tests:
// YAML through a real YAML parser, with the short-form intrinsic functions
// (!Ref, !GetAtt, !Sub, …) turned into their long form ({"Ref": …},
// {"Fn::GetAtt": [resource, attribute]}), which is also how synthesised JSON
// templates spell them, so a test reads both kinds the same way.
package cfntemplate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Template is a parsed template.
type Template map[string]any

// Load reads a YAML or JSON template.
func Load(path string) (Template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Parse reads a YAML (or JSON, which is YAML) template.
func Parse(b []byte) (Template, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(b)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("cfntemplate: %w", err)
	}
	if len(doc.Content) != 1 {
		return nil, fmt.Errorf("cfntemplate: want one document")
	}
	v, err := convert(doc.Content[0])
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("cfntemplate: the template is not a mapping")
	}
	return m, nil
}

// convert turns a YAML node into plain Go values, expanding short-form tags.
func convert(n *yaml.Node) (any, error) {
	var v any
	switch n.Kind {
	case yaml.AliasNode:
		return convert(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			if _, dup := m[key]; dup {
				return nil, fmt.Errorf("cfntemplate: line %d: key %q given twice", n.Content[i].Line, key)
			}
			val, err := convert(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[key] = val
		}
		v = m
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			val, err := convert(c)
			if err != nil {
				return nil, err
			}
			l = append(l, val)
		}
		v = l
	case yaml.ScalarNode:
		if custom(n.Tag) {
			v = n.Value // the argument of a short-form intrinsic
		} else if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("cfntemplate: line %d: %w", n.Line, err)
		}
	default:
		return nil, fmt.Errorf("cfntemplate: line %d: unexpected node", n.Line)
	}
	if !custom(n.Tag) {
		return v, nil
	}
	name := strings.TrimPrefix(n.Tag, "!")
	switch name {
	case "Ref", "Condition":
		return map[string]any{name: v}, nil
	case "GetAtt":
		if s, ok := v.(string); ok {
			res, attr, _ := strings.Cut(s, ".")
			v = []any{res, attr}
		}
		return map[string]any{"Fn::GetAtt": v}, nil
	default:
		return map[string]any{"Fn::" + name: v}, nil
	}
}

// custom reports whether tag is a local tag (!Ref) rather than a YAML
// standard one (!!str, !!map, …).
func custom(tag string) bool { return strings.HasPrefix(tag, "!") && !strings.HasPrefix(tag, "!!") }

// Resources returns the logical ids and bodies of the resources of a type.
func (t Template) Resources(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	res, _ := t["Resources"].(map[string]any)
	for id, r := range res {
		body, _ := r.(map[string]any)
		if body["Type"] == typ {
			out[id] = body
		}
	}
	return out
}

// Get walks a path of map keys and list indexes (ints) from v, returning nil
// when any step is missing.
func Get(v any, path ...any) any {
	if t, ok := v.(Template); ok {
		v = map[string]any(t)
	}
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k < 0 || k >= len(l) {
				return nil
			}
			v = l[k]
		default:
			return nil
		}
	}
	return v
}

// String renders v compactly (intrinsics in long form), for messages and
// comparisons.
func String(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
