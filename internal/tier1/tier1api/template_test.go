package tier1api_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vwr-go/vwr/internal/testenv"
)

// TestTemplateMatchesRoutes keeps template.yaml and Handlers.Routes in step:
// every route is declared once with its method, admin routes (and only they)
// carry AWS_IAM, and every CodeUri is a lambdas/<fn> directory. Full schema
// checks are `make validate`'s job (sam validate --lint, cfn-lint).
func TestTemplateMatchesRoutes(t *testing.T) {
	t.Parallel()
	root := testenv.RepoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tpl := string(b)
	b1 := setup(t, setupOpts{})
	for _, r := range b1.h.Routes() {
		re := regexp.MustCompile(`(?m)^\s+Method: ` + r.Method + `\n\s+Path: ` + regexp.QuoteMeta(r.Path) + `\n((\s+Auth:\n\s+Authorizer: AWS_IAM\n)?)`)
		m := re.FindAllStringSubmatch(tpl, -1)
		if len(m) != 1 {
			t.Errorf("route %s declared %d times in template.yaml", r.RouteKey(), len(m))
			continue
		}
		admin := strings.HasPrefix(r.Path, "/vwr/admin/")
		if iam := m[0][1] != ""; iam != admin {
			t.Errorf("route %s: AWS_IAM %v, want %v", r.RouteKey(), iam, admin)
		}
	}
	if n := strings.Count(tpl, "Type: HttpApi\n"); n != len(b1.h.Routes()) {
		t.Errorf("template has %d HttpApi events, Routes() has %d", n, len(b1.h.Routes()))
	}
	for _, m := range regexp.MustCompile(`CodeUri: (\S+)`).FindAllStringSubmatch(tpl, -1) {
		if _, err := os.Stat(filepath.Join(root, m[1], "main.go")); err != nil {
			t.Errorf("CodeUri %s has no main.go", m[1])
		}
	}
	for _, want := range []string{
		"Runtime: provided.al2023", "Architectures: [arm64]", "Handler: bootstrap",
		"Schedule: rate(1 minute)", "AttributeName: ttl", "BillingMode: PAY_PER_REQUEST",
		"Tier1TokenKeys:\n    Type: String\n    NoEcho: true",
	} {
		if !strings.Contains(tpl, want) {
			t.Errorf("template.yaml lacks %q", want)
		}
	}
	if strings.Contains(tpl, "FullAccess") {
		t.Error("template.yaml grants a *FullAccess policy")
	}

	// Least privilege: each Tier 1 function lists exactly the DynamoDB calls
	// dynamostore makes for it (no Scan, no Batch*, no table-wide CRUD
	// template), each on a named table.
	want := map[string]string{
		"AssignFunction":   "EventsTable[Query UpdateItem] PositionsTable[GetItem PutItem]",
		"CheckFunction":    "EventsTable[Query] PositionsTable[GetItem]",
		"StatusFunction":   "EventsTable[Query]",
		"AdminFunction":    "EventsTable[Query UpdateItem DeleteItem] AdmittedStatsTable[Query]",
		"AdvancerFunction": "EventsTable[GetItem Query UpdateItem]",
	}
	stmtRE := regexp.MustCompile(`Action: \[([^\]]*)\]\n\s+Resource: !GetAtt (\w+)\.Arn`)
	for fn, grants := range want {
		block := resourceBlock(tpl, fn)
		if block == "" {
			t.Errorf("template.yaml has no %s", fn)
			continue
		}
		if strings.Contains(block, "DynamoDBCrudPolicy") || strings.Contains(block, "DynamoDBReadPolicy") {
			t.Errorf("%s uses a table-wide SAM policy template", fn)
		}
		var got []string
		for _, m := range stmtRE.FindAllStringSubmatch(block, -1) {
			got = append(got, m[2]+"["+strings.ReplaceAll(strings.ReplaceAll(m[1], "dynamodb:", ""), ",", "")+"]")
		}
		if g := strings.Join(got, " "); g != grants {
			t.Errorf("%s grants %q, want %q", fn, g, grants)
		}
		// Only admin reads the SQS consumer's stats; status stays on its cache.
		stats := strings.Contains(block, "VWR_ADMITTED_STATS_TABLE: !Ref AdmittedStatsTable")
		if want := fn == "AdminFunction"; stats != want {
			t.Errorf("%s has VWR_ADMITTED_STATS_TABLE %v, want %v", fn, stats, want)
		}
	}
}

// resourceBlock returns the lines of template resource name, up to the next
// resource at the same indentation.
func resourceBlock(tpl, name string) string {
	_, rest, ok := strings.Cut(tpl, "\n  "+name+":\n")
	if !ok {
		return ""
	}
	if i := regexp.MustCompile(`\n  [A-Za-z]`).FindStringIndex(rest); i != nil {
		rest = rest[:i[0]]
	}
	return rest
}
