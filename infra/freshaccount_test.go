package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/vwr-go/vwr/internal/tier1/tier1api"
)

// The resources that make a deploy work on a fresh account and keep the
// front door the only way in (issue 19): each has its assertion here.

// TestRegistry: the Tier 2 image lives in a repository of the stacks' own,
// immutable tags, scanned on push, old images expiring, kept on deletion.
func TestRegistry(t *testing.T) {
	reg := synth(t).templates["Registry"]
	_, repo := reg.byConstruct("AWS::ECR::Repository", "QueueRepository")
	if repo == nil {
		t.Fatal("no ECR repository")
	}
	p := repo["Properties"]
	if get(p, "RepositoryName") != QueueRepositoryName || get(p, "ImageTagMutability") != "IMMUTABLE" ||
		get(p, "ImageScanningConfiguration", "ScanOnPush") != true || repo["DeletionPolicy"] != "Retain" {
		t.Errorf("repository %s", js(repo))
	}
	if !strings.Contains(js(get(p, "LifecyclePolicy")), fmt.Sprintf(`\"countNumber\":%d`, KeptImages)) {
		t.Errorf("lifecycle %s", js(get(p, "LifecyclePolicy")))
	}
	if get(reg, "Outputs", "QueueRepositoryUri") == nil {
		t.Error("no QueueRepositoryUri output: make deploy pushes there")
	}
	// vwr:queueRepository names an existing one instead.
	cfg := testConfig(t)
	cfg.QueueRepository = "shop/vwr-queue"
	named := templateOf(t, cfg, func(v *VWR) awscdk.Stack { return v.Registry.Stack })
	if len(named.resources("AWS::ECR::Repository")) != 0 || !strings.Contains(js(get(named, "Outputs", "QueueRepositoryUri")), "shop/vwr-queue") {
		t.Errorf("a named repository: %s", js(named))
	}
}

// TestTier2PullsItsImage: the service runs the tag of that repository, its
// execution role may pull exactly there, and a deployment whose tasks never
// turn healthy rolls back.
func TestTier2PullsItsImage(t *testing.T) {
	t2 := synth(t).templates["Tier2"]
	var image string
	for _, td := range t2.resources("AWS::ECS::TaskDefinition") {
		image = js(get(td, "Properties", "ContainerDefinitions", 0, "Image"))
	}
	if !strings.Contains(image, `{"Ref":"QueueImageTag"}`) || !strings.Contains(image, "QueueRepository") {
		t.Errorf("container image %s: want the registry's repository at the QueueImageTag tag", image)
	}
	pull := false
	for _, st := range statements(t2) {
		acts := asList(st["Action"])
		pull = pull || (slices.Contains(acts, any("ecr:BatchGetImage")) && slices.Contains(acts, any("ecr:GetDownloadUrlForLayer")) &&
			strings.Contains(js(st["Resource"]), "QueueRepository"))
	}
	if !pull {
		t.Error("the task execution role may not pull from the repository")
	}
	services := t2.resources("AWS::ECS::Service")
	if len(services) != 1 {
		t.Fatalf("%d services", len(services))
	}
	for _, svc := range services {
		cb := get(svc, "Properties", "DeploymentConfiguration", "DeploymentCircuitBreaker")
		if get(cb, "Enable") != true || get(cb, "Rollback") != true {
			t.Errorf("deployment circuit breaker %s, want enabled with rollback", js(cb))
		}
	}
}

// TestAdvancerReservedConcurrencyIsOptional: off by default (TestAdvancerSchedule),
// the context key's value when set.
func TestAdvancerReservedConcurrencyIsOptional(t *testing.T) {
	cfg := testConfig(t)
	cfg.AdvancerReservedConcurrency = 1
	tier1 := templateOf(t, cfg, func(v *VWR) awscdk.Stack { return v.Tier1.Stack })
	_, adv := tier1.byConstruct("AWS::Lambda::Function", "AdvancerFunction")
	if num(get(adv, "Properties", "ReservedConcurrentExecutions")) != 1 {
		t.Errorf("vwr:advancerReservedConcurrency=1 gave %v", get(adv, "Properties", "ReservedConcurrentExecutions"))
	}
}

// TestCustomDomain: with vwr:domainName and vwr:certificateArn the
// distribution answers on the shop's own name with that certificate (SNI,
// TLS 1.2 at least); without them, on its cloudfront.net name only.
func TestCustomDomain(t *testing.T) {
	if get(synth(t).templates["FrontDoor"], "Outputs", "CustomDomain") != nil {
		t.Error("a custom domain output without a custom domain")
	}
	cfg := testConfig(t)
	cfg.DomainName = "tickets.shop.example.com"
	cfg.CertificateARN = "arn:aws:acm:us-east-1:123456789012:certificate/0b5c3c0e-1111-2222-3333-444455556666"
	fd := templateOf(t, cfg, func(v *VWR) awscdk.Stack { return v.FrontDoor.Stack })
	for _, d := range fd.resources("AWS::CloudFront::Distribution") {
		dc := get(d, "Properties", "DistributionConfig")
		if js(get(dc, "Aliases")) != `["tickets.shop.example.com"]` || get(dc, "ViewerCertificate", "AcmCertificateArn") != cfg.CertificateARN ||
			get(dc, "ViewerCertificate", "SslSupportMethod") != "sni-only" || get(dc, "ViewerCertificate", "MinimumProtocolVersion") != "TLSv1.2_2021" {
			t.Errorf("distribution %s", js(dc))
		}
	}
	if get(fd, "Outputs", "CustomDomain", "Value") != "tickets.shop.example.com" {
		t.Errorf("outputs %s", js(get(fd, "Outputs")))
	}
}

// TestOriginVerify: every origin CloudFront sends requests to gets the
// origin-verify header, its value a dynamic reference to the secret's
// us-east-1 replica (never in the template), and the secret is replicated
// there from Tier 1's region.
func TestOriginVerify(t *testing.T) {
	s := synth(t)
	tier1, fd := s.templates["Tier1"], s.templates["FrontDoor"]
	_, secret := tier1.byConstruct("AWS::SecretsManager::Secret", "OriginVerifySecret")
	name := "vwr/VwrTier1/origin-verify"
	if get(secret, "Properties", "Name") != name || get(secret, "Properties", "ReplicaRegions", 0, "Region") != FrontDoorRegion {
		t.Fatalf("origin-verify secret %s", js(secret))
	}
	if get(tier1, "Outputs", "OriginVerifySecretName", "Value") != name {
		t.Errorf("no OriginVerifySecretName output")
	}
	for _, d := range fd.resources("AWS::CloudFront::Distribution") {
		for _, o := range get(d, "Properties", "DistributionConfig", "Origins").([]any) {
			if get(o, "S3OriginConfig") != nil {
				continue // the waiting page: Origin Access Control instead
			}
			h := get(o, "OriginCustomHeaders", 0)
			if get(h, "HeaderName") != OriginVerifyHeader || get(h, "HeaderValue") != "{{resolve:secretsmanager:"+name+":SecretString:value::}}" {
				t.Errorf("origin %v: custom headers %s", get(o, "DomainName"), js(get(o, "OriginCustomHeaders")))
			}
		}
	}
	// In us-east-1 already, nothing to replicate.
	cfg := testConfig(t)
	cfg.Region = FrontDoorRegion
	local := templateOf(t, cfg, func(v *VWR) awscdk.Stack { return v.Tier1.Stack })
	if _, sec := local.byConstruct("AWS::SecretsManager::Secret", "OriginVerifySecret"); get(sec, "Properties", "ReplicaRegions") != nil {
		t.Errorf("a replica into the secret's own region: %s", js(sec))
	}
}

// TestApi429Metric: the access log's 429s become vwr/tier1 Api429.
func TestApi429Metric(t *testing.T) {
	tier1 := synth(t).templates["Tier1"]
	logID, _ := tier1.byConstruct("AWS::Logs::LogGroup", "ApiAccessLogGroup")
	_, f := tier1.byConstruct("AWS::Logs::MetricFilter", "Api429Filter")
	if get(f, "Properties", "FilterPattern") != `{ $.status = "429" }` || js(get(f, "Properties", "LogGroupName")) != `{"Ref":"`+logID+`"}` ||
		get(f, "Properties", "MetricTransformations", 0, "MetricName") != MetricAPI429 ||
		get(f, "Properties", "MetricTransformations", 0, "MetricNamespace") != tier1api.Namespace {
		t.Errorf("429 filter %s", js(f))
	}
}

// TestSaleAlarms: the alarms a sale is run with, each notifying its
// region's topic, with the thresholds and missing-data rules that make them
// fire when they should.
func TestSaleAlarms(t *testing.T) {
	s := synth(t)
	ops := s.templates["Ops"]
	alarm := func(id string) map[string]any {
		_, a := ops.byConstruct("AWS::CloudWatch::Alarm", id)
		if a == nil {
			t.Fatalf("no alarm %s", id)
		}
		return a
	}
	// The stalled counter: a line and nobody let through, five minutes.
	st := alarm("ServingCounterStalled")
	if m := get(st, "Properties", "Metrics", 0, "Expression"); m != "IF(FILL(w, 0) > 0 AND FILL(r, 0) <= 0, 1, 0)" ||
		!strings.Contains(js(get(st, "Properties", "Metrics")), tier1api.MetricEventsWaiting) || num(get(st, "Properties", "EvaluationPeriods")) != 5 {
		t.Errorf("stalled counter %s", js(st))
	}
	// Silence is the alarm for the advancer and the running tasks.
	for _, id := range []string{"AdvancerNotRunning", "Tier2RunningTasks"} {
		a := alarm(id)
		if get(a, "Properties", "TreatMissingData") != "breaching" || get(a, "Properties", "ComparisonOperator") != "LessThanThreshold" {
			t.Errorf("%s %s", id, js(a))
		}
	}
	if num(get(alarm("Tier2RunningTasks"), "Properties", "Threshold")) != Tier2MinTasks {
		t.Error("running tasks alarm not at the service's minimum")
	}
	if get(alarm("Tier2UnhealthyTargets"), "Properties", "MetricName") != "UnHealthyHostCount" {
		t.Error("unhealthy targets alarm")
	}
	if get(alarm("AdmittedOldestAge"), "Properties", "MetricName") != "ApproximateAgeOfOldestMessage" ||
		num(get(alarm("AdmittedOldestAge"), "Properties", "Threshold")) != AdmittedMaxAgeSeconds {
		t.Error("oldest admitted notice alarm")
	}
	if get(alarm("Api429"), "Properties", "MetricName") != MetricAPI429 {
		t.Error("API 429 alarm")
	}
	// Throttles of every event: the dimensionless sum, not EventId=all.
	if d := get(alarm("Tier1StoreThrottles"), "Properties", "Dimensions"); d != nil {
		t.Errorf("store throttles alarm reads dimensions %s; the handlers emit per event and without dimensions", js(d))
	}
	// ElastiCache: each shard's alarm reads every node of the shard.
	mem := js(get(alarm("CacheMemoryShard2"), "Properties", "Metrics"))
	if !strings.Contains(mem, "MAX([n1, n2])") || !strings.Contains(mem, `"0002-001"`) || !strings.Contains(mem, `"0002-002"`) {
		t.Errorf("shard 2 memory alarm %s", mem)
	}
	// CloudFront's 5xx rate, in us-east-1 with its own topic.
	fd := s.templates["FrontDoor"]
	topicID, _ := fd.byConstruct("AWS::SNS::Topic", "EdgeAlarms")
	_, edge := fd.byConstruct("AWS::CloudWatch::Alarm", "Edge5xxRate")
	if get(edge, "Properties", "MetricName") != "5xxErrorRate" || num(get(edge, "Properties", "Threshold")) != Edge5xxPercent ||
		js(get(edge, "Properties", "AlarmActions")) != `[{"Ref":"`+topicID+`"}]` {
		t.Errorf("edge 5xx alarm %s", js(edge))
	}
}

// TestDashboard: every event's series by SEARCH (no event ids baked in),
// every alarm on an alarm-status widget, CloudFront read from us-east-1,
// and each cache node.
func TestDashboard(t *testing.T) {
	s := synth(t)
	ops := s.templates["Ops"]
	var body string
	for _, d := range ops.resources("AWS::CloudWatch::Dashboard") {
		body = js(get(d, "Properties", "DashboardBody"))
	}
	for _, m := range []string{tier1api.MetricAssignments, tier1api.MetricReleased, tier1api.MetricServingCounter, tier1api.MetricAdmissions, tier1api.MetricThrottles} {
		want := fmt.Sprintf(`SEARCH('{%s,%s} MetricName=\\\"%s\\\"'`, tier1api.Namespace, tier1api.MetricDimension, m)
		if !strings.Contains(body, want) {
			t.Errorf("no per-event SEARCH for %s (%s)", m, want)
		}
	}
	if strings.Contains(body, `\"EventId\",\"all\"`) {
		t.Error("the dashboard reads EventId=all, which only the advancer's throttle count carries")
	}
	for id := range ops.resources("AWS::CloudWatch::Alarm") {
		if !strings.Contains(body, id) {
			t.Errorf("alarm %s is not on the dashboard", id)
		}
	}
	if !strings.Contains(body, `AWS/CloudFront`) || !strings.Contains(body, `\"region\":\"us-east-1\"`) {
		t.Error("no front door metrics from us-east-1")
	}
	for _, node := range []string{"0001-001", "0001-002", "0002-001", "0002-002"} {
		if strings.Count(body, node) < 2 {
			t.Errorf("cache node %s is not on the dashboard's memory and CPU graphs", node)
		}
	}
}

// TestConfigContextKeys: the new keys are read and checked.
func TestConfigContextKeys(t *testing.T) {
	base := DefaultConfig()
	base.ProtectedOrigin = "shop.example.com"
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"domain without certificate", func(c *Config) { c.DomainName = "tickets.example.com" }, "vwr:certificateArn"},
		{"certificate outside us-east-1", func(c *Config) {
			c.DomainName, c.CertificateARN = "tickets.example.com", "arn:aws:acm:eu-west-1:123456789012:certificate/x"
		}, "us-east-1"},
		{"not a host name", func(c *Config) {
			c.DomainName, c.CertificateARN = "https://tickets.example.com/", "arn:aws:acm:us-east-1:123456789012:certificate/x"
		}, "vwr:domainName"},
		{"reserved concurrency out of range", func(c *Config) { c.AdvancerReservedConcurrency = 50 }, "vwr:advancerReservedConcurrency"},
		{"bad repository name", func(c *Config) { c.QueueRepository = "Shop Repo" }, "vwr:queueRepository"},
	} {
		c := base
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]interface{}{
		"vwr:protectedOrigin": "www.example.org", "vwr:domainName": "q.example.org",
		"vwr:certificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/abc", "vwr:advancerReservedConcurrency": "2",
		"vwr:queueRepository": "vwr-queue-prod",
	}})
	got, err := ConfigFromContext(app)
	if err != nil || got.DomainName != "q.example.org" || got.AdvancerReservedConcurrency != 2 || got.QueueRepository != "vwr-queue-prod" {
		t.Fatalf("context: %+v, %v", got, err)
	}
}
