package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/vwr-go/vwr/internal/cfntemplate"
	"github.com/vwr-go/vwr/internal/tier1/tier1api"
)

// The parity test: template.yaml (SAM) and the CDK app's Tier 1 stack must
// define the same functions (handler, runtime, architecture, memory,
// timeout, environment names), the same routes on the same functions with
// the same authorization, the same tables (keys, TTL) and the same queues
// (attributes, redrive), and both must serve exactly the routes the handlers
// register (tier1api). Each side is rendered as sorted lines, one fact per
// line, so a difference reads as a short diff.

// samModel renders template.yaml.
func samModel(t *testing.T) []string {
	t.Helper()
	tpl, err := cfntemplate.Load(filepath.Join("..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	globals := cfntemplate.Get(tpl, "Globals", "Function")
	pick := func(fn any, key string) any {
		if v := cfntemplate.Get(fn, "Properties", key); v != nil {
			return v
		}
		return cfntemplate.Get(globals, key)
	}
	for id, fn := range tpl.Resources("AWS::Serverless::Function") {
		env := map[string]bool{}
		for _, vars := range []any{cfntemplate.Get(globals, "Environment", "Variables"), cfntemplate.Get(fn, "Properties", "Environment", "Variables")} {
			m, _ := vars.(map[string]any)
			for k := range m {
				env[k] = true
			}
		}
		lines = append(lines, functionLine(id, pick(fn, "Handler"), pick(fn, "Runtime"), pick(fn, "Architectures"), pick(fn, "MemorySize"), pick(fn, "Timeout"), env))
		events, _ := cfntemplate.Get(fn, "Properties", "Events").(map[string]any)
		for _, ev := range events {
			if cfntemplate.Get(ev, "Type") != "HttpApi" {
				continue
			}
			method, _ := cfntemplate.Get(ev, "Properties", "Method").(string)
			path, _ := cfntemplate.Get(ev, "Properties", "Path").(string)
			auth := "NONE"
			if cfntemplate.Get(ev, "Properties", "Auth", "Authorizer") == "AWS_IAM" {
				auth = "AWS_IAM"
			}
			lines = append(lines, routeLine(strings.ToUpper(method)+" "+path, id, auth))
		}
	}
	for id, tbl := range tpl.Resources("AWS::DynamoDB::Table") {
		lines = append(lines, tableLine(id, tbl["Properties"]))
	}
	for id, q := range tpl.Resources("AWS::SQS::Queue") {
		lines = append(lines, queueLine(id, q["Properties"], func(ref any) string {
			return fmt.Sprint(cfntemplate.Get(ref, "Fn::GetAtt", 0))
		}))
	}
	for _, m := range tpl.Resources("AWS::Lambda::EventSourceMapping") {
		lines = append(lines, mappingLine(cfntemplate.Get(m, "Properties"), func(ref any) string {
			if s := cfntemplate.Get(ref, "Fn::GetAtt", 0); s != nil {
				return fmt.Sprint(s)
			}
			return fmt.Sprint(cfntemplate.Get(ref, "Ref"))
		}))
	}
	// SAM's SQS events would be mappings too; the template declares its one
	// mapping directly (see the consumer's grants).
	sort.Strings(lines)
	return lines
}

// cdkModel renders the CDK Tier 1 stack.
func cdkModel(t *testing.T) []string {
	t.Helper()
	tier1 := synth(t).templates["Tier1"]
	name := func(logical string) string {
		return strings.TrimSuffix(logical, cdkHash.FindString(logical))
	}
	ours := map[string]bool{}
	for _, spec := range Tier1Functions {
		ours[spec.ID] = true
	}
	var lines []string
	fnByLogical := map[string]string{}
	for id, fn := range tier1.resources("AWS::Lambda::Function") {
		if !ours[name(id)] {
			continue // CDK's own helpers (the cross-region export writer)
		}
		fnByLogical[id] = name(id)
		p := fn["Properties"]
		env := map[string]bool{}
		vars, _ := get(p, "Environment", "Variables").(map[string]any)
		for k := range vars {
			// The origin-verify value is CloudFront's: the CDK app puts
			// CloudFront in front of the API, template.yaml (Tier 1 alone)
			// does not, so only the CDK functions require it.
			if k != "VWR_ORIGIN_VERIFY_SECRET_ARN" {
				env[k] = true
			}
		}
		lines = append(lines, functionLine(name(id), get(p, "Handler"), get(p, "Runtime"), get(p, "Architectures"), get(p, "MemorySize"), get(p, "Timeout"), env))
	}
	integrations := map[string]string{} // integration logical id → function name
	for id, in := range tier1.resources("AWS::ApiGatewayV2::Integration") {
		integrations[id] = fnByLogical[fmt.Sprint(get(in, "Properties", "IntegrationUri", "Fn::GetAtt", 0))]
	}
	for _, r := range tier1.resources("AWS::ApiGatewayV2::Route") {
		p := r["Properties"]
		target := js(get(p, "Target"))
		fn := "?"
		for id, f := range integrations {
			if strings.Contains(target, `"`+id+`"`) {
				fn = f
			}
		}
		auth, _ := get(p, "AuthorizationType").(string)
		if auth == "" {
			auth = "NONE"
		}
		lines = append(lines, routeLine(fmt.Sprint(get(p, "RouteKey")), fn, auth))
	}
	for id, tbl := range tier1.resources("AWS::DynamoDB::Table") {
		lines = append(lines, tableLine(name(id), tbl["Properties"]))
	}
	for id, q := range tier1.resources("AWS::SQS::Queue") {
		lines = append(lines, queueLine(name(id), q["Properties"], func(ref any) string {
			return name(fmt.Sprint(get(ref, "Fn::GetAtt", 0)))
		}))
	}
	for _, m := range tier1.resources("AWS::Lambda::EventSourceMapping") {
		lines = append(lines, mappingLine(m["Properties"], func(ref any) string {
			if s := get(ref, "Fn::GetAtt", 0); s != nil {
				return name(fmt.Sprint(s))
			}
			return name(fmt.Sprint(get(ref, "Ref")))
		}))
	}
	sort.Strings(lines)
	return lines
}

func functionLine(id string, handler, runtime, arch, memory, timeout any, env map[string]bool) string {
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	return fmt.Sprintf("function %s: handler=%v runtime=%v arch=%s memory=%s timeout=%s env=%s",
		id, handler, runtime, js(arch), n(memory), n(timeout), strings.Join(names, ","))
}

func routeLine(key, fn, auth string) string {
	return fmt.Sprintf("route %s -> %s auth=%s", key, fn, auth)
}

func tableLine(id string, p any) string {
	types := map[string]string{}
	for _, a := range asList(get(p, "AttributeDefinitions")) {
		types[fmt.Sprint(get(a, "AttributeName"))] = fmt.Sprint(get(a, "AttributeType"))
	}
	var keys []string
	for _, k := range asList(get(p, "KeySchema")) {
		n := fmt.Sprint(get(k, "AttributeName"))
		keys = append(keys, fmt.Sprintf("%s(%s,%s)", n, types[n], get(k, "KeyType")))
	}
	ttl := "none"
	if get(p, "TimeToLiveSpecification", "Enabled") == true {
		ttl = fmt.Sprint(get(p, "TimeToLiveSpecification", "AttributeName"))
	}
	return fmt.Sprintf("table %s: keys=%s ttl=%s billing=%v", id, strings.Join(keys, " "), ttl, get(p, "BillingMode"))
}

func queueLine(id string, p any, target func(any) string) string {
	redrive := "none"
	if rp := get(p, "RedrivePolicy"); rp != nil {
		redrive = fmt.Sprintf("%s after %s", target(get(rp, "deadLetterTargetArn")), n(get(rp, "maxReceiveCount")))
	}
	return fmt.Sprintf("queue %s: fifo=%v contentDedup=%v visibility=%s retention=%s sse=%v redrive=%s",
		id, get(p, "FifoQueue") == true, get(p, "ContentBasedDeduplication") == true, n(get(p, "VisibilityTimeout")),
		n(get(p, "MessageRetentionPeriod")), get(p, "SqsManagedSseEnabled") == true, redrive)
}

func mappingLine(p any, target func(any) string) string {
	return fmt.Sprintf("mapping %s -> %s: batch=%s responses=%s",
		target(get(p, "EventSourceArn")), target(get(p, "FunctionName")), n(get(p, "BatchSize")), js(get(p, "FunctionResponseTypes")))
}

// n renders a number from either template ("unset" when absent).
func n(v any) string {
	if v == nil {
		return "unset"
	}
	return strconv.FormatFloat(num(v), 'f', -1, 64)
}

// diff lists the lines only in a (-) and only in b (+).
func diff(a, b []string) string {
	var out []string
	for _, l := range a {
		if !slices.Contains(b, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range b {
		if !slices.Contains(a, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

func routesOf(lines []string) []string {
	var out []string
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, "route "); ok {
			key, _, _ := strings.Cut(rest, " -> ")
			out = append(out, key)
		}
	}
	sort.Strings(out)
	return out
}

func TestSAMAndCDKParity(t *testing.T) {
	sam, cdk := samModel(t), cdkModel(t)
	if len(sam) < 15 || len(cdk) < 15 {
		t.Fatalf("too little read: %d SAM facts, %d CDK facts", len(sam), len(cdk))
	}
	if d := diff(sam, cdk); d != "" {
		t.Errorf("template.yaml and the CDK Tier 1 stack differ (- only in template.yaml, + only in the CDK app):\n%s", d)
	}
	handlers := tier1api.New(tier1api.Deps{}, tier1api.AdminOptions{}).Routes()
	sort.Strings(handlers)
	for side, lines := range map[string][]string{"template.yaml": sam, "the CDK app": cdk} {
		if d := diff(handlers, routesOf(lines)); d != "" {
			t.Errorf("%s does not serve exactly the handlers' routes (- registered by a handler only, + declared only):\n%s", side, d)
		}
	}
}

// TestParityDiffIsReadable: the diff names the fact that differs.
func TestParityDiffIsReadable(t *testing.T) {
	a := []string{routeLine("GET /vwr/status/{eventId}", "StatusFunction", "NONE"), "table T: keys=pk(S,HASH) ttl=none billing=PAY_PER_REQUEST"}
	b := []string{routeLine("GET /vwr/status/{eventId}", "StatusFunction", "NONE"), routeLine("POST /vwr/draw/{eventId}", "DrawFunction", "AWS_IAM"), "table T: keys=pk(S,HASH) ttl=ttl billing=PAY_PER_REQUEST"}
	want := "- table T: keys=pk(S,HASH) ttl=none billing=PAY_PER_REQUEST\n" +
		"+ route POST /vwr/draw/{eventId} -> DrawFunction auth=AWS_IAM\n" +
		"+ table T: keys=pk(S,HASH) ttl=ttl billing=PAY_PER_REQUEST"
	if got := diff(a, b); got != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", got, want)
	}
}
