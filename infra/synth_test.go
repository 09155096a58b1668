package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/vwr-go/vwr/internal/cfntemplate"
)

// The tests synthesise the app once, in a region other than us-east-1 so
// the front door's references to Tier 1 and Tier 2 cross regions, and read
// each stack's template (assertions.Template_FromStack) as plain JSON.

// testRegion is where the app stacks go in the tests.
const testRegion = "eu-west-1"

type synthesised struct {
	app       *VWR
	templates map[string]cfn // by stack: Registry, FrontDoor, Tier1, Tier2, Ops
	raw       map[string]assertions.Template
	err       error
}

var (
	synthOnce sync.Once
	synthOut  synthesised
)

// cfn is a template as JSON values.
type cfn map[string]any

// testConfig is the configuration the tests synthesise.
func testConfig(t *testing.T) Config {
	c := DefaultConfig()
	c.Region = testRegion
	c.ProtectedOrigin = "shop.example.com"
	// The Lambda assets: `make lambdas` output when present, else stand-in
	// files (the templates do not depend on the code's bytes).
	dir := t.TempDir()
	for _, f := range Tier1Functions {
		if err := os.MkdirAll(filepath.Join(dir, f.Dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.Dir, "bootstrap"), []byte("stand-in for bin/"+f.Dir+"/bootstrap"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c.LambdaDir = dir
	return c
}

func synth(t *testing.T) synthesised {
	t.Helper()
	synthOnce.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				synthOut.err = jsiiError(r)
			}
		}()
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		v := NewVWR(app, testConfig(t))
		synthOut.app = v
		synthOut.templates = map[string]cfn{}
		synthOut.raw = map[string]assertions.Template{}
		for name, st := range map[string]awscdk.Stack{"Registry": v.Registry.Stack, "FrontDoor": v.FrontDoor.Stack, "Tier1": v.Tier1.Stack, "Tier2": v.Tier2.Stack, "Ops": v.Ops.Stack} {
			tpl := assertions.Template_FromStack(st, nil)
			synthOut.raw[name] = tpl
			b, err := json.Marshal(*tpl.ToJSON())
			if err != nil {
				synthOut.err = err
				return
			}
			var m cfn
			if err := json.Unmarshal(b, &m); err != nil {
				synthOut.err = err
				return
			}
			synthOut.templates[name] = m
		}
	})
	if synthOut.err != nil {
		t.Fatalf("synthesis: %v", synthOut.err)
	}
	return synthOut
}

type panicErr struct{ v any }

func (p panicErr) Error() string { return strings.TrimSpace(strings.Split(jsonish(p.v), "\n")[0]) }

func jsiiError(v any) error { return panicErr{v} }

func jsonish(v any) string {
	if e, ok := v.(error); ok {
		return e.Error()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// get walks a JSON value by keys and indexes; nil when a step is missing.
func get(v any, path ...any) any {
	if c, ok := v.(cfn); ok {
		v = map[string]any(c)
	}
	return cfntemplate.Get(v, path...)
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// resources returns a template's resources of one type, by logical id.
func (c cfn) resources(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	all, _ := get(c, "Resources").(map[string]any)
	for id, r := range all {
		if m, ok := r.(map[string]any); ok && m["Type"] == typ {
			out[id] = m
		}
	}
	return out
}

// cdkHash is the 8-hex-digit suffix CDK appends to logical ids.
var cdkHash = regexp.MustCompile(`[0-9A-F]{8}$`)

// byConstruct returns the resource of a type whose logical id is the
// top-level construct id plus CDK's hash (AssignFunction → AssignFunction3E1F6BF7),
// or the construct id itself for an L1 resource.
func (c cfn) byConstruct(typ, construct string) (string, map[string]any) {
	for id, r := range c.resources(typ) {
		if id == construct { // an L1 resource at the stack's top level
			return id, r
		}
		if cdkHash.MatchString(id) && strings.TrimSuffix(id, cdkHash.FindString(id)) == construct {
			return id, r
		}
	}
	return "", nil
}

// templateOf synthesises one stack of an app built from cfg (for the tests
// of context keys that change a template).
func templateOf(t *testing.T, cfg Config, pick func(*VWR) awscdk.Stack) cfn {
	t.Helper()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	v := NewVWR(app, cfg)
	b, err := json.Marshal(*assertions.Template_FromStack(pick(v), nil).ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	var c cfn
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}
