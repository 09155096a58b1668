package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vwr-go/vwr/internal/cfntemplate"
)

// TestSAMTemplateDeployable checks what makes template.yaml deployable as
// production Tier 1 beyond what the SAM transform and cfn-lint check
// (`make validate`): IAM routes enabled, lean makefile builds that exist,
// keys only as a secret reference, log groups wired by LoggingConfig, the
// sale's tables kept and recoverable.
func TestSAMTemplateDeployable(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := cfntemplate.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	res := tpl.Resources
	if cfntemplate.Get(tpl, "Resources", "HttpApi", "Properties", "Auth", "EnableIamAuthorizer") != true {
		t.Error("HttpApi lacks Auth.EnableIamAuthorizer: the transform rejects the AWS_IAM routes")
	}
	params, _ := cfntemplate.Get(tpl, "Parameters").(map[string]any)
	for name, p := range params {
		if cfntemplate.Get(p, "NoEcho") == true || strings.Contains(name, "Token") || strings.Contains(name, "Key") {
			t.Errorf("parameter %s looks like a secret: secrets live in Secrets Manager", name)
		}
	}
	makefile, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	secretish := regexp.MustCompile(`(?i)(KEY|SECRET|TOKEN|PASSWORD)`)
	for id, fn := range res("AWS::Serverless::Function") {
		if cfntemplate.Get(fn, "Metadata", "BuildMethod") != "makefile" {
			t.Errorf("%s: BuildMethod %v, want makefile (the lean build)", id, cfntemplate.Get(fn, "Metadata", "BuildMethod"))
		}
		out, err := exec.Command("make", "-s", "-n", "-C", "..", "build-"+id, "ARTIFACTS_DIR=/artifacts").CombinedOutput()
		if err != nil {
			t.Errorf("%s: make build-%s: %v\n%s", id, id, err, out)
		} else {
			cmd := string(out)
			codeURI, _ := cfntemplate.Get(fn, "Properties", "CodeUri").(string)
			for _, want := range []string{"GOARCH=arm64", "-tags lambda.norpc", `-ldflags "-s -w"`, "-o /artifacts/bootstrap", "./" + strings.TrimSuffix(codeURI, "/")} {
				if !strings.Contains(cmd, want) {
					t.Errorf("%s: the build lacks %q: %s", id, want, cmd)
				}
			}
		}
		if !strings.Contains(string(makefile), id) {
			t.Errorf("%s is not in the Makefile's SAM_FUNCTIONS", id)
		}
		lg, _ := cfntemplate.Get(fn, "Properties", "LoggingConfig", "LogGroup", "Ref").(string)
		if lg == "" || cfntemplate.Get(tpl, "Resources", lg, "Type") != "AWS::Logs::LogGroup" {
			t.Errorf("%s: LoggingConfig.LogGroup %v is not a log group of the template", id, lg)
		}
		vars, _ := cfntemplate.Get(fn, "Properties", "Environment", "Variables").(map[string]any)
		for k, v := range vars {
			if secretish.MatchString(k) && !(strings.HasSuffix(k, "_SECRET_ARN") && cfntemplate.Get(v, "Ref") == "Tier1KeysSecret") {
				t.Errorf("%s: environment %s = %s", id, k, cfntemplate.String(v))
			}
		}
	}
	for id, lg := range res("AWS::Logs::LogGroup") {
		if cfntemplate.Get(lg, "Properties", "LogGroupName") != nil {
			t.Errorf("%s names its log group after the function, which races the first invocation", id)
		}
	}
	for _, id := range []string{"EventsTable", "PositionsTable"} {
		tbl, _ := cfntemplate.Get(tpl, "Resources", id).(map[string]any)
		if tbl["DeletionPolicy"] != "Retain" || tbl["UpdateReplacePolicy"] != "Retain" ||
			cfntemplate.Get(tbl, "Properties", "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled") != true {
			t.Errorf("%s: deletion %v, replace %v, PITR %v", id, tbl["DeletionPolicy"], tbl["UpdateReplacePolicy"],
				cfntemplate.Get(tbl, "Properties", "PointInTimeRecoverySpecification"))
		}
	}
	if cfntemplate.Get(tpl, "Resources", "Tier1KeysSecret", "Type") != "AWS::SecretsManager::Secret" {
		t.Error("no Tier1KeysSecret")
	}
	// The consumer: no SAM SQS event (it would attach a managed policy on
	// Resource *), grants on its own queue.
	consumer := cfntemplate.Get(tpl, "Resources", "AdmittedConsumerFunction")
	if cfntemplate.Get(consumer, "Properties", "Events") != nil {
		t.Error("the consumer has SAM events")
	}
	if body := cfntemplate.String(consumer); strings.Contains(body, "SQSPollerPolicy") || strings.Contains(body, `"Resource":"*"`) {
		t.Errorf("consumer grants: %s", cfntemplate.String(cfntemplate.Get(consumer, "Properties", "Policies")))
	}
}
