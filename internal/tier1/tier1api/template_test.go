package tier1api_test

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/vwr-go/vwr/internal/cfntemplate"
	"github.com/vwr-go/vwr/internal/testenv"
)

// TestTemplateMatchesRoutes keeps template.yaml and the API's routes in step,
// reading the template with a real YAML parser: every route is declared once
// with its method, admin routes (and only they) use AWS_IAM, every CodeUri is
// a lambdas/<fn> directory, and each function's DynamoDB grants are exactly
// the calls its store makes. Schema checks are `make validate`'s job.
func TestTemplateMatchesRoutes(t *testing.T) {
	t.Parallel()
	root := testenv.RepoRoot(t)
	tpl, err := cfntemplate.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t, setupOpts{})
	declared := map[string]int{}
	iam := map[string]bool{}
	functions := tpl.Resources("AWS::Serverless::Function")
	for id, fn := range functions {
		codeURI, _ := cfntemplate.Get(fn, "Properties", "CodeUri").(string)
		if _, err := os.Stat(filepath.Join(root, codeURI, "main.go")); err != nil {
			t.Errorf("%s: CodeUri %q has no main.go", id, codeURI)
		}
		events, _ := cfntemplate.Get(fn, "Properties", "Events").(map[string]any)
		for name, ev := range events {
			if cfntemplate.Get(ev, "Type") != "HttpApi" {
				continue
			}
			method, _ := cfntemplate.Get(ev, "Properties", "Method").(string)
			path, _ := cfntemplate.Get(ev, "Properties", "Path").(string)
			key := strings.ToUpper(method) + " " + path
			declared[key]++
			iam[key] = cfntemplate.Get(ev, "Properties", "Auth", "Authorizer") == "AWS_IAM"
			if !strings.HasPrefix(filepath.Clean(codeURI), "lambdas/") {
				t.Errorf("%s.%s: CodeUri %q is not under lambdas/", id, name, codeURI)
			}
		}
	}
	for _, r := range b.api.Routes() {
		if declared[r] != 1 {
			t.Errorf("route %s declared %d times in template.yaml", r, declared[r])
		}
		if admin := strings.Contains(r, " /vwr/admin/"); iam[r] != admin {
			t.Errorf("route %s: AWS_IAM %v, want %v", r, iam[r], admin)
		}
	}
	if len(declared) != len(b.api.Routes()) {
		t.Errorf("template declares %d HTTP routes, the API has %d: %v", len(declared), len(b.api.Routes()), declared)
	}

	globals := cfntemplate.Get(tpl, "Globals", "Function")
	for path, want := range map[string]any{"Runtime": "provided.al2023", "Handler": "bootstrap"} {
		if got := cfntemplate.Get(globals, path); got != want {
			t.Errorf("Globals.Function.%s = %v, want %v", path, got, want)
		}
	}
	if arch := cfntemplate.String(cfntemplate.Get(globals, "Architectures")); arch != `["arm64"]` {
		t.Errorf("Globals.Function.Architectures = %s", arch)
	}

	// Least privilege: each Tier 1 function lists exactly the DynamoDB calls
	// its store makes, each statement on one named table.
	want := map[string]string{
		"AssignFunction":   "EventsTable[BatchGetItem GetItem PutItem Query UpdateItem] PositionsTable[GetItem PutItem UpdateItem]",
		"CheckFunction":    "EventsTable[BatchGetItem GetItem] PositionsTable[GetItem]",
		"StatusFunction":   "EventsTable[BatchGetItem]",
		"DrawFunction":     "EventsTable[BatchGetItem BatchWriteItem GetItem Query UpdateItem]",
		"AdminFunction":    "AdmittedStatsTable[Query] EventsTable[BatchGetItem DeleteItem GetItem Query UpdateItem]",
		"AdvancerFunction": "EventsTable[BatchGetItem BatchWriteItem GetItem Query UpdateItem]",
	}
	for id, grants := range want {
		fn, ok := functions[id]
		if !ok {
			t.Errorf("template.yaml has no %s", id)
			continue
		}
		if got := dynamoGrants(t, fn); got != grants {
			t.Errorf("%s grants %q, want %q", id, got, grants)
		}
		// Only admin reads the SQS consumer's stats; status stays on its cache.
		stats := cfntemplate.Get(fn, "Properties", "Environment", "Variables", "VWR_ADMITTED_STATS_TABLE") != nil
		if stats != (id == "AdminFunction") {
			t.Errorf("%s has VWR_ADMITTED_STATS_TABLE %v", id, stats)
		}
	}
	if raw, _ := os.ReadFile(filepath.Join(root, "template.yaml")); strings.Contains(string(raw), "FullAccess") {
		t.Error("template.yaml grants a *FullAccess policy")
	}
}

// dynamoGrants renders a function's inline DynamoDB statements as
// "Table[Action …] …", sorted, refusing table-wide SAM policy templates.
func dynamoGrants(t *testing.T, fn map[string]any) string {
	t.Helper()
	var out []string
	policies, _ := cfntemplate.Get(fn, "Properties", "Policies").([]any)
	for _, p := range policies {
		if m, ok := p.(map[string]any); ok {
			for k := range m {
				if strings.HasPrefix(k, "DynamoDB") {
					t.Errorf("uses the table-wide SAM policy template %s", k)
				}
			}
		}
		stmts, _ := cfntemplate.Get(p, "Statement").([]any)
		for _, s := range stmts {
			var actions []string
			acts, _ := cfntemplate.Get(s, "Action").([]any)
			for _, a := range acts {
				if name, ok := strings.CutPrefix(a.(string), "dynamodb:"); ok {
					actions = append(actions, name)
				}
			}
			if len(actions) == 0 {
				continue
			}
			table, _ := cfntemplate.Get(s, "Resource", "Fn::GetAtt", 0).(string)
			sort.Strings(actions)
			out = append(out, table+"["+strings.Join(actions, " ")+"]")
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}
