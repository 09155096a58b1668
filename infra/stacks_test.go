package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/tier1api"
)

// requiredEnv is the environment each function needs (names only): the
// base every function gets, as template.yaml's Globals, plus its own.
var requiredEnv = map[string][]string{
	"AssignFunction":           {"VWR_TIER1_TOKEN_KEYS_SECRET_ARN", "VWR_TIER1_CLIENT_IP_HEADER", "VWR_ORIGIN_VERIFY_SECRET_ARN"},
	"CheckFunction":            {"VWR_TIER1_TOKEN_KEYS_SECRET_ARN", "VWR_ORIGIN_VERIFY_SECRET_ARN"},
	"StatusFunction":           {"VWR_ORIGIN_VERIFY_SECRET_ARN"},
	"DrawFunction":             {"VWR_ORIGIN_VERIFY_SECRET_ARN"},
	"AdminFunction":            {"VWR_ADMITTED_STATS_TABLE"},
	"AdvancerFunction":         {"ADVANCER_TICKS"},
	"AdmittedConsumerFunction": {"VWR_ADMITTED_PROCESSED_TABLE", "VWR_ADMITTED_STATS_TABLE"},
}

var baseEnv = []string{"ADVANCER_TICK_SECONDS", "VWR_TIER1_EVENTS_TABLE", "VWR_TIER1_POSITIONS_TABLE", "VWR_TIER1_STORE"}

// TestFunctions: every function is a Go bootstrap on provided.al2023/arm64
// with exactly the environment names it needs.
func TestFunctions(t *testing.T) {
	tier1 := synth(t).templates["Tier1"]
	for _, spec := range Tier1Functions {
		id, fn := tier1.byConstruct("AWS::Lambda::Function", spec.ID)
		if fn == nil {
			t.Errorf("no function %s", spec.ID)
			continue
		}
		p := fn["Properties"]
		if get(p, "Runtime") != "provided.al2023" || js(get(p, "Architectures")) != `["arm64"]` || get(p, "Handler") != "bootstrap" {
			t.Errorf("%s: runtime %v, architectures %s, handler %v", id, get(p, "Runtime"), js(get(p, "Architectures")), get(p, "Handler"))
		}
		if get(p, "LoggingConfig", "LogGroup") == nil {
			t.Errorf("%s: no LoggingConfig.LogGroup", id)
		}
		vars, _ := get(p, "Environment", "Variables").(map[string]any)
		got := sortedKeys(vars)
		want := append(slices.Clone(baseEnv), requiredEnv[spec.ID]...)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s environment names\n got %v\nwant %v", spec.ID, got, want)
		}
	}
	if n := len(tier1.resources("AWS::Lambda::Function")); n < len(Tier1Functions) {
		t.Errorf("%d functions, want at least %d", n, len(Tier1Functions))
	}
}

// TestRoutes: the HTTP API has exactly the routes the handlers register,
// each on the function that serves it, IAM on the admin routes only.
func TestRoutes(t *testing.T) {
	tier1 := synth(t).templates["Tier1"]
	got := map[string]string{} // route key → authorization
	for _, r := range tier1.resources("AWS::ApiGatewayV2::Route") {
		key, _ := get(r, "Properties", "RouteKey").(string)
		auth, _ := get(r, "Properties", "AuthorizationType").(string)
		if _, dup := got[key]; dup {
			t.Errorf("route %s declared twice", key)
		}
		got[key] = auth
	}
	handlers := tier1api.New(tier1api.Deps{}, tier1api.AdminOptions{}).Routes()
	for _, r := range handlers {
		auth, ok := got[r]
		if !ok {
			t.Errorf("the handlers register %s; the HTTP API has no such route", r)
			continue
		}
		if want := map[bool]string{true: "AWS_IAM", false: "NONE"}[isAdminRoute(r)]; auth != want && !(want == "NONE" && auth == "") {
			t.Errorf("route %s: authorization %q, want %s", r, auth, want)
		}
		delete(got, r)
	}
	for r := range got {
		t.Errorf("the HTTP API has %s, which no handler registers", r)
	}
	stage := tier1.resources("AWS::ApiGatewayV2::Stage")
	if len(stage) != 1 {
		t.Fatalf("%d stages", len(stage))
	}
	for _, st := range stage {
		if get(st, "Properties", "AccessLogSettings", "DestinationArn") == nil || get(st, "Properties", "DefaultRouteSettings", "ThrottlingRateLimit") == nil {
			t.Errorf("stage without access logs or throttling: %s", js(st))
		}
	}
}

// statements yields every IAM statement of a template: policies and
// roles' inline policies.
func statements(c cfn) []map[string]any {
	var out []map[string]any
	add := func(doc any) {
		list, _ := get(doc, "Statement").([]any)
		for _, s := range list {
			if m, ok := s.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	for _, p := range c.resources("AWS::IAM::Policy") {
		add(get(p, "Properties", "PolicyDocument"))
	}
	for _, p := range c.resources("AWS::IAM::ManagedPolicy") {
		add(get(p, "Properties", "PolicyDocument"))
	}
	for _, r := range c.resources("AWS::IAM::Role") {
		pols, _ := get(r, "Properties", "Policies").([]any)
		for _, p := range pols {
			add(get(p, "PolicyDocument"))
		}
	}
	return out
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// starOnly are the actions AWS grants only on Resource "*" (they have no
// resource-level permissions): ECR's login token for the image pull, and the
// prefix-list lookup of the load balancer's ingress.
var starOnly = map[string]bool{"ecr:GetAuthorizationToken": true, "ec2:DescribeManagedPrefixLists": true}

// TestLeastPrivilege: no wildcard actions anywhere, and Resource "*" only
// for CloudWatch Logs and the actions that cannot name a resource.
func TestLeastPrivilege(t *testing.T) {
	s := synth(t)
	for _, name := range sortedKeys(s.templates) {
		stmts := statements(s.templates[name])
		if len(stmts) == 0 {
			continue
		}
		for _, st := range stmts {
			actions := asList(st["Action"])
			for _, a := range actions {
				if a == "*" || strings.HasSuffix(fmt.Sprint(a), ":*") {
					t.Errorf("%s: wildcard action %v in %s", name, a, js(st))
				}
			}
			for _, r := range asList(st["Resource"]) {
				if r != "*" {
					continue
				}
				for _, a := range actions {
					if !strings.HasPrefix(fmt.Sprint(a), "logs:") && !starOnly[fmt.Sprint(a)] {
						t.Errorf("%s: Resource * for %v in %s", name, a, js(st))
					}
				}
			}
		}
	}
}

// TestTables: keys, TTL, on-demand; events and positions kept on deletion
// with point-in-time recovery; the events table pre-warmed.
func TestTables(t *testing.T) {
	tier1 := synth(t).templates["Tier1"]
	want := map[string]struct{ keys, ttl string }{
		"EventsTable":            {`[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}]`, ""},
		"PositionsTable":         {`[{"AttributeName":"requestId","KeyType":"HASH"}]`, "ttl"},
		"AdmittedProcessedTable": {`[{"AttributeName":"id","KeyType":"HASH"}]`, "ttl"},
		"AdmittedStatsTable":     {`[{"AttributeName":"eventId","KeyType":"HASH"},{"AttributeName":"minute","KeyType":"RANGE"}]`, "ttl"},
	}
	for id, w := range want {
		_, tbl := tier1.byConstruct("AWS::DynamoDB::Table", id)
		if tbl == nil {
			t.Errorf("no table %s", id)
			continue
		}
		p := tbl["Properties"]
		if got := js(get(p, "KeySchema")); got != w.keys {
			t.Errorf("%s keys %s, want %s", id, got, w.keys)
		}
		ttl, _ := get(p, "TimeToLiveSpecification", "AttributeName").(string)
		if ttl != w.ttl || (w.ttl != "" && get(p, "TimeToLiveSpecification", "Enabled") != true) {
			t.Errorf("%s TTL %s", id, js(get(p, "TimeToLiveSpecification")))
		}
		if get(p, "BillingMode") != "PAY_PER_REQUEST" {
			t.Errorf("%s billing %v", id, get(p, "BillingMode"))
		}
		if id == "EventsTable" || id == "PositionsTable" {
			if tbl["DeletionPolicy"] != "Retain" || tbl["UpdateReplacePolicy"] != "Retain" {
				t.Errorf("%s deletion %v, replace %v; want Retain", id, tbl["DeletionPolicy"], tbl["UpdateReplacePolicy"])
			}
			if get(p, "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled") != true {
				t.Errorf("%s without point-in-time recovery", id)
			}
		}
		if id == "EventsTable" && (get(p, "WarmThroughput", "ReadUnitsPerSecond") == nil || get(p, "WarmThroughput", "WriteUnitsPerSecond") == nil) {
			t.Errorf("events table without warm throughput: %s", js(get(p, "WarmThroughput")))
		}
	}
	if _, ok := get(tier1, "Parameters", "EventsTableWarmReadUnits").(map[string]any); !ok {
		t.Error("no EventsTableWarmReadUnits parameter")
	}
}

func num(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case int:
		return float64(n)
	case int64:
		return float64(n)
	case string:
		f, _ := strconv.ParseFloat(n, 64)
		return f
	}
	return 0
}

// TestQueueAndConsumer: a FIFO queue that redrives to a FIFO DLQ after 5
// receives, hides a message 6 × the consumer's timeout, and a mapping that
// reports partial batch failures.
func TestQueueAndConsumer(t *testing.T) {
	tier1 := synth(t).templates["Tier1"]
	qid, q := tier1.byConstruct("AWS::SQS::Queue", "AdmittedQueue")
	dlqID, dlq := tier1.byConstruct("AWS::SQS::Queue", "AdmittedDLQ")
	_, fn := tier1.byConstruct("AWS::Lambda::Function", "AdmittedConsumerFunction")
	if q == nil || dlq == nil || fn == nil {
		t.Fatal("admitted queue, DLQ or consumer missing")
	}
	if get(q, "Properties", "FifoQueue") != true || get(dlq, "Properties", "FifoQueue") != true {
		t.Error("queue and DLQ must both be FIFO")
	}
	if get(q, "Properties", "ContentBasedDeduplication") != false {
		t.Error("content-based deduplication must be off: the publisher sets the id")
	}
	if num(get(q, "Properties", "RedrivePolicy", "maxReceiveCount")) != 5 || js(get(q, "Properties", "RedrivePolicy", "deadLetterTargetArn")) != `{"Fn::GetAtt":["`+dlqID+`","Arn"]}` {
		t.Errorf("redrive %s", js(get(q, "Properties", "RedrivePolicy")))
	}
	vis, timeout := num(get(q, "Properties", "VisibilityTimeout")), num(get(fn, "Properties", "Timeout"))
	if timeout == 0 || vis < 6*timeout {
		t.Errorf("visibility timeout %v < 6 × consumer timeout %v", vis, timeout)
	}
	maps := tier1.resources("AWS::Lambda::EventSourceMapping")
	if len(maps) != 1 {
		t.Fatalf("%d event source mappings", len(maps))
	}
	for _, m := range maps {
		if js(get(m, "Properties", "FunctionResponseTypes")) != `["ReportBatchItemFailures"]` {
			t.Errorf("mapping %s", js(m))
		}
		if js(get(m, "Properties", "EventSourceArn")) != `{"Fn::GetAtt":["`+qid+`","Arn"]}` {
			t.Errorf("mapping reads %s", js(get(m, "Properties", "EventSourceArn")))
		}
	}
}

// TestAdvancerSchedule: a rate(1 minute) rule targets the advancer, whose
// timeout covers ticks × tick seconds, with one instance at a time, no
// async retries and an on-failure destination.
func TestAdvancerSchedule(t *testing.T) {
	tier1 := synth(t).templates["Tier1"]
	advID, adv := tier1.byConstruct("AWS::Lambda::Function", "AdvancerFunction")
	if adv == nil {
		t.Fatal("no advancer")
	}
	rules := tier1.resources("AWS::Events::Rule")
	if len(rules) != 1 {
		t.Fatalf("%d rules", len(rules))
	}
	for _, r := range rules {
		if get(r, "Properties", "ScheduleExpression") != "rate(1 minute)" {
			t.Errorf("schedule %v", get(r, "Properties", "ScheduleExpression"))
		}
		if js(get(r, "Properties", "Targets", 0, "Arn")) != `{"Fn::GetAtt":["`+advID+`","Arn"]}` {
			t.Errorf("target %s", js(get(r, "Properties", "Targets")))
		}
	}
	p := adv["Properties"]
	ticks := num(get(p, "Environment", "Variables", "ADVANCER_TICKS"))
	secs := num(get(p, "Environment", "Variables", "ADVANCER_TICK_SECONDS"))
	if timeout := num(get(p, "Timeout")); ticks < 1 || secs < 1 || timeout <= ticks*secs {
		t.Errorf("advancer timeout %v must exceed %v ticks × %v s", timeout, ticks, secs)
	}
	// No reserved concurrency unless asked (vwr:advancerReservedConcurrency):
	// a new account's Lambda quota of 10 cannot spare it.
	if rc := get(p, "ReservedConcurrentExecutions"); rc != nil {
		t.Errorf("reserved concurrency %v by default, want none", rc)
	}
	cfgs := tier1.resources("AWS::Lambda::EventInvokeConfig")
	if len(cfgs) != 1 {
		t.Fatalf("%d event invoke configs", len(cfgs))
	}
	for _, c := range cfgs {
		if num(get(c, "Properties", "MaximumRetryAttempts")) != 0 || get(c, "Properties", "MaximumRetryAttempts") == nil ||
			get(c, "Properties", "DestinationConfig", "OnFailure", "Destination") == nil {
			t.Errorf("event invoke config %s", js(c))
		}
	}
}

// TestFrontDoor: the behaviours, their functions, the status cache policy,
// Origin Access Control and the WAF association.
func TestFrontDoor(t *testing.T) {
	s := synth(t)
	fd := s.templates["FrontDoor"]
	if got := *s.app.FrontDoor.Region(); got != FrontDoorRegion {
		t.Errorf("front door in %s, want %s", got, FrontDoorRegion)
	}
	dists := fd.resources("AWS::CloudFront::Distribution")
	if len(dists) != 1 {
		t.Fatalf("%d distributions", len(dists))
	}
	var dist map[string]any
	for _, d := range dists {
		dist = d
	}
	dc := get(dist, "Properties", "DistributionConfig")
	fnID := func(construct string) string {
		id, _ := fd.byConstruct("AWS::CloudFront::Function", construct)
		if id == "" {
			t.Fatalf("no CloudFront function %s", construct)
		}
		return id
	}
	assoc := func(b any) string {
		fa, _ := get(b, "FunctionAssociations").([]any)
		if len(fa) != 1 || get(fa[0], "EventType") != "viewer-request" {
			return js(fa)
		}
		arn := get(fa[0], "FunctionARN", "Fn::GetAtt", 0)
		return fmt.Sprint(arn)
	}
	if got := assoc(get(dc, "DefaultCacheBehavior")); got != fnID("EdgeCheck") {
		t.Errorf("default behaviour's viewer-request function %s, want the edge check", got)
	}
	origins := map[string]any{}
	for _, o := range get(dc, "Origins").([]any) {
		origins[get(o, "Id").(string)] = o
	}
	if get(origins[get(dc, "DefaultCacheBehavior", "TargetOriginId").(string)], "DomainName") != "shop.example.com" {
		t.Error("the default behaviour does not go to the protected origin")
	}
	statusID, status := fd.byConstruct("AWS::CloudFront::CachePolicy", "StatusCache")
	drawID, draw := fd.byConstruct("AWS::CloudFront::CachePolicy", "DrawCache")
	challengeID, challenge := fd.byConstruct("AWS::CloudFront::CachePolicy", "ChallengeCache")
	want := []struct {
		path, function, cache string
		origin                func(o any) bool
	}{
		{PathAPIStatus, fnID("StripApiPrefix"), statusID, func(o any) bool { return strings.Contains(js(o), "Fn::Split") }},
		{PathAPIDraw, fnID("StripApiPrefix"), drawID, func(o any) bool { return strings.Contains(js(o), "Fn::Split") }},
		{PathAPIChallenge, fnID("StripApiPrefix"), challengeID, func(o any) bool { return strings.Contains(js(o), "Fn::Split") }},
		{PathAPI, fnID("StripApiPrefix"), "4135ea2d-6df8-44a3-9df3-4b5a84be39ad", func(o any) bool { return strings.Contains(js(o), "Fn::Split") }},
		{PathPage, fnID("PageIndex"), "658327ea-f89d-4fab-a63d-7e88639e58f6", func(o any) bool { return get(o, "OriginAccessControlId") != nil }},
		{PathTier2, "", "4135ea2d-6df8-44a3-9df3-4b5a84be39ad", func(o any) bool { return get(o, "CustomOriginConfig", "OriginProtocolPolicy") == "http-only" }},
	}
	behaviours, _ := get(dc, "CacheBehaviors").([]any)
	if len(behaviours) != len(want) {
		t.Fatalf("%d cache behaviours, want %d: %s", len(behaviours), len(want), js(behaviours))
	}
	for i, w := range want {
		b := behaviours[i]
		if get(b, "PathPattern") != w.path {
			t.Errorf("behaviour %d is %v, want %s (order matters: status and draw before the rest of the API)", i, get(b, "PathPattern"), w.path)
			continue
		}
		if w.function != "" && assoc(b) != w.function {
			t.Errorf("%s: viewer-request function %s, want %s", w.path, assoc(b), w.function)
		}
		if w.function == "" && get(b, "FunctionAssociations") != nil {
			t.Errorf("%s: unexpected functions %s", w.path, js(get(b, "FunctionAssociations")))
		}
		cp := get(b, "CachePolicyId")
		if cpID, _ := get(cp, "Ref").(string); cpID != w.cache && cp != w.cache {
			t.Errorf("%s: cache policy %s, want %s", w.path, js(cp), w.cache)
		}
		if !w.origin(origins[get(b, "TargetOriginId").(string)]) {
			t.Errorf("%s: origin %s", w.path, js(origins[get(b, "TargetOriginId").(string)]))
		}
	}
	// The API behaviour forwards cookies, Idempotency-Key, Client-Nonce, the
	// Altcha solution and the viewer's address, never Host.
	_, orp := fd.byConstruct("AWS::CloudFront::OriginRequestPolicy", "ApiForward")
	if js(get(orp, "Properties", "OriginRequestPolicyConfig", "HeadersConfig", "Headers")) != `["Idempotency-Key","Client-Nonce","Altcha","CloudFront-Viewer-Address"]` ||
		get(orp, "Properties", "OriginRequestPolicyConfig", "CookiesConfig", "CookieBehavior") != "all" {
		t.Errorf("API origin request policy %s", js(orp))
	}
	// Status: 1–5 s from the origin's Cache-Control, path-only key.
	pc := get(status, "Properties", "CachePolicyConfig")
	if num(get(pc, "MinTTL")) != StatusMinTTL || num(get(pc, "MaxTTL")) != StatusMaxTTL {
		t.Errorf("status TTLs min %v max %v", get(pc, "MinTTL"), get(pc, "MaxTTL"))
	}
	key := get(pc, "ParametersInCacheKeyAndForwardedToOrigin")
	if get(key, "CookiesConfig", "CookieBehavior") != "none" || get(key, "HeadersConfig", "HeaderBehavior") != "none" || get(key, "QueryStringsConfig", "QueryStringBehavior") != "none" {
		t.Errorf("status cache key %s", js(key))
	}
	// Draw: 1 s while drawing up to a year once immutable, path-only key.
	dc2 := get(draw, "Properties", "CachePolicyConfig")
	if num(get(dc2, "MinTTL")) != DrawMinTTL || num(get(dc2, "MaxTTL")) != DrawMaxTTL {
		t.Errorf("draw TTLs min %v max %v", get(dc2, "MinTTL"), get(dc2, "MaxTTL"))
	}
	if !strings.Contains(tier1api.DrawnCacheControl, fmt.Sprintf("max-age=%d,", DrawMaxTTL)) {
		t.Errorf("DrawMaxTTL %d is not the drawn documents' max-age (%s)", DrawMaxTTL, tier1api.DrawnCacheControl)
	}
	dkey := get(dc2, "ParametersInCacheKeyAndForwardedToOrigin")
	if get(dkey, "CookiesConfig", "CookieBehavior") != "none" || get(dkey, "HeadersConfig", "HeaderBehavior") != "none" || get(dkey, "QueryStringsConfig", "QueryStringBehavior") != "none" {
		t.Errorf("draw cache key %s", js(dkey))
	}
	// Challenge: keyed on the path and ?nonce= only, kept no longer than a
	// window, and only as long as the origin says (MinTTL 0: no-store holds).
	cc := get(challenge, "Properties", "CachePolicyConfig")
	if num(get(cc, "MinTTL")) != ChallengeMinTTL || num(get(cc, "DefaultTTL")) != 0 || num(get(cc, "MaxTTL")) != ChallengeMaxTTL {
		t.Errorf("challenge TTLs %s", js(cc))
	}
	if ckey := get(cc, "ParametersInCacheKeyAndForwardedToOrigin"); get(ckey, "CookiesConfig", "CookieBehavior") != "none" || get(ckey, "HeadersConfig", "HeaderBehavior") != "none" ||
		get(ckey, "QueryStringsConfig", "QueryStringBehavior") != "whitelist" || js(get(ckey, "QueryStringsConfig", "QueryStrings")) != `["nonce"]` {
		t.Errorf("challenge cache key %s", js(ckey))
	}
	if time.Duration(ChallengeMaxTTL)*time.Second != tier1.DefaultPowWindow {
		t.Errorf("ChallengeMaxTTL %d s is not the default challenge window %s", ChallengeMaxTTL, tier1.DefaultPowWindow)
	}
	// Origin Access Control on a private bucket.
	if len(fd.resources("AWS::CloudFront::OriginAccessControl")) != 1 {
		t.Error("no Origin Access Control")
	}
	_, bucket := fd.byConstruct("AWS::S3::Bucket", "PageBucket")
	if js(get(bucket, "Properties", "PublicAccessBlockConfiguration")) != `{"BlockPublicAcls":true,"BlockPublicPolicy":true,"IgnorePublicAcls":true,"RestrictPublicBuckets":true}` {
		t.Errorf("bucket public access %s", js(get(bucket, "Properties", "PublicAccessBlockConfiguration")))
	}
	if len(fd.resources("Custom::CDKBucketDeployment")) != 1 {
		t.Error("no deployment of static/vwr")
	}
	// WAF: CloudFront scope, associated, a rate rule on assign per IP and
	// the common rule set, the limit a parameter.
	aclID, acl := fd.byConstruct("AWS::WAFv2::WebACL", "WebACL")
	if acl == nil || get(acl, "Properties", "Scope") != "CLOUDFRONT" {
		t.Fatalf("web ACL %s", js(acl))
	}
	if js(get(dc, "WebACLId")) != `{"Fn::GetAtt":["`+aclID+`","Arn"]}` {
		t.Errorf("distribution web ACL %s", js(get(dc, "WebACLId")))
	}
	rate := get(acl, "Properties", "Rules", 0, "Statement", "RateBasedStatement")
	if get(rate, "AggregateKeyType") != "IP" || js(get(rate, "Limit")) != `{"Ref":"AssignRateLimit"}` ||
		get(rate, "ScopeDownStatement", "ByteMatchStatement", "SearchString") != AssignPrefix {
		t.Errorf("rate rule %s", js(rate))
	}
	if get(acl, "Properties", "Rules", 1, "Statement", "ManagedRuleGroupStatement", "Name") != "AWSManagedRulesCommonRuleSet" {
		t.Errorf("managed rules %s", js(get(acl, "Properties", "Rules", 1)))
	}
	// The edge check reads its keys from the KeyValueStore.
	_, edge := fd.byConstruct("AWS::CloudFront::Function", "EdgeCheck")
	kvsID, _ := fd.byConstruct("AWS::CloudFront::KeyValueStore", "EdgeKeys")
	if get(edge, "Properties", "FunctionConfig", "Runtime") != "cloudfront-js-2.0" ||
		js(get(edge, "Properties", "FunctionConfig", "KeyValueStoreAssociations", 0, "KeyValueStoreARN")) != `{"Fn::GetAtt":["`+kvsID+`","Arn"]}` {
		t.Errorf("edge check config %s", js(get(edge, "Properties", "FunctionConfig")))
	}
}

// TestEdgeKeysAdmin: the one policy on the KeyValueStore names it and
// nothing else.
func TestEdgeKeysAdmin(t *testing.T) {
	fd := synth(t).templates["FrontDoor"]
	kvsID, _ := fd.byConstruct("AWS::CloudFront::KeyValueStore", "EdgeKeys")
	_, pol := fd.byConstruct("AWS::IAM::ManagedPolicy", "EdgeKeysAdmin")
	st := get(pol, "Properties", "PolicyDocument", "Statement")
	if len(asList(st)) != 1 || js(get(st, 0, "Resource")) != `{"Fn::GetAtt":["`+kvsID+`","Arn"]}` {
		t.Errorf("edge keys policy %s", js(st))
	}
	for _, a := range asList(get(st, 0, "Action")) {
		if !strings.HasPrefix(fmt.Sprint(a), "cloudfront-keyvaluestore:") {
			t.Errorf("edge keys policy grants %v", a)
		}
	}
}

// TestEdgeCodeIsTheTestedFile: the deployed function code is the file the
// node:test vectors run.
func TestEdgeCodeIsTheTestedFile(t *testing.T) {
	fd := synth(t).templates["FrontDoor"]
	for construct, file := range map[string]string{"EdgeCheck": "edge-check.js", "StripApiPrefix": "strip-prefix.js", "PageIndex": "page-index.js"} {
		_, fn := fd.byConstruct("AWS::CloudFront::Function", construct)
		want, err := os.ReadFile(filepath.Join("edge", file))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := get(fn, "Properties", "FunctionCode").(string); got != string(want) {
			t.Errorf("%s: the synthesised code is not edge/%s", construct, file)
		}
	}
}

// TestAlarms: every alarm the issue names exists and notifies the topic.
func TestAlarms(t *testing.T) {
	ops := synth(t).templates["Ops"]
	topicID, _ := ops.byConstruct("AWS::SNS::Topic", "Alarms")
	if topicID == "" {
		t.Fatal("no SNS topic")
	}
	want := []string{"AdmittedDLQDepth", "AdvancerFailures", "AdvancerFunctionErrors", "Api5xx", "EventsTableThrottles", "PositionsTableThrottles",
		"Tier1StoreThrottles", "Tier2Target5xx", "Tier2Elb5xx", "CacheMemoryShard1", "CacheCpuShard1"}
	for _, spec := range Tier1Functions {
		want = append(want, spec.ID+"Errors", spec.ID+"Throttles")
	}
	for _, id := range want {
		_, a := ops.byConstruct("AWS::CloudWatch::Alarm", id)
		if a == nil {
			t.Errorf("no alarm %s", id)
			continue
		}
		if js(get(a, "Properties", "AlarmActions")) != `[{"Ref":"`+topicID+`"}]` {
			t.Errorf("alarm %s notifies %s", id, js(get(a, "Properties", "AlarmActions")))
		}
	}
	_, tp := ops.byConstruct("AWS::CloudWatch::Alarm", "Tier1StoreThrottles")
	if get(tp, "Properties", "Namespace") != tier1api.Namespace || get(tp, "Properties", "MetricName") != tier1api.MetricThrottles {
		t.Errorf("store throttles alarm watches %v/%v", get(tp, "Properties", "Namespace"), get(tp, "Properties", "MetricName"))
	}
	if len(ops.resources("AWS::CloudWatch::Dashboard")) != 1 {
		t.Error("no dashboard")
	}
}

// secretish matches environment names that would carry key material.
var secretish = regexp.MustCompile(`(?i)(KEY|SECRET|TOKEN|PASSWORD|AUTH|REDIS_URL)`)

// TestNoKeyMaterialInEnvironment: no function or container environment
// variable carries a key, a token or a password; secrets travel as ARNs
// (read at cold start) or as ECS secrets (injected at task start).
func TestNoKeyMaterialInEnvironment(t *testing.T) {
	s := synth(t)
	for _, name := range sortedKeys(s.templates) {
		c := s.templates[name]
		for id, fn := range c.resources("AWS::Lambda::Function") {
			vars, _ := get(fn, "Properties", "Environment", "Variables").(map[string]any)
			for k, v := range vars {
				if secretish.MatchString(k) && !strings.HasSuffix(k, "_SECRET_ARN") {
					t.Errorf("%s/%s: environment %s", name, id, k)
				}
				if strings.HasSuffix(k, "_SECRET_ARN") && !strings.Contains(js(v), `"Ref"`) {
					t.Errorf("%s/%s: %s = %s is not a reference to a secret", name, id, k, js(v))
				}
			}
		}
		for id, td := range c.resources("AWS::ECS::TaskDefinition") {
			for _, cd := range asList(get(td, "Properties", "ContainerDefinitions")) {
				for _, e := range asList(get(cd, "Environment")) {
					if k, _ := get(e, "Name").(string); secretish.MatchString(k) {
						t.Errorf("%s/%s: container environment %s", name, id, k)
					}
				}
				injected := map[string]bool{}
				for _, sec := range asList(get(cd, "Secrets")) {
					injected[fmt.Sprint(get(sec, "Name"))] = true
				}
				for _, k := range []string{"REDIS_URL", "QUEUE_ENTRY_TOKEN_SECRET", "VWR_TIER1_TOKEN_KEYS"} {
					if !injected[k] {
						t.Errorf("%s/%s: %s is not injected from Secrets Manager", name, id, k)
					}
				}
			}
		}
	}
}

// TestTier2: 2 AZs, Valkey in cluster mode with TLS and a token from
// Secrets Manager, Fargate behind an ALB checking /healthz, CPU scaling,
// send permission on the admitted queue.
func TestTier2(t *testing.T) {
	t2 := synth(t).templates["Tier2"]
	if n := len(t2.resources("AWS::EC2::Subnet")); n != 4 {
		t.Errorf("%d subnets, want 2 AZs × public/private", n)
	}
	_, rg := t2.byConstruct("AWS::ElastiCache::ReplicationGroup", "Cache")
	p := rg["Properties"]
	if get(p, "ClusterMode") != "enabled" || get(p, "TransitEncryptionEnabled") != true || get(p, "Engine") != "valkey" ||
		!strings.Contains(js(get(p, "AuthToken")), "resolve:secretsmanager") {
		t.Errorf("cache %s", js(p))
	}
	for _, tg := range t2.resources("AWS::ElasticLoadBalancingV2::TargetGroup") {
		if get(tg, "Properties", "HealthCheckPath") != "/livez" {
			t.Errorf("health check %v, want /livez (a Redis failover must not fail every task)", get(tg, "Properties", "HealthCheckPath"))
		}
	}
	cpu := false
	for _, sp := range t2.resources("AWS::ApplicationAutoScaling::ScalingPolicy") {
		cpu = cpu || get(sp, "Properties", "TargetTrackingScalingPolicyConfiguration", "PredefinedMetricSpecification", "PredefinedMetricType") == "ECSServiceAverageCPUUtilization"
	}
	if !cpu {
		t.Error("no CPU scaling policy")
	}
	send := false
	for _, st := range statements(t2) {
		send = send || (slices.Contains(asList(st["Action"]), any("sqs:SendMessage")) && strings.Contains(js(st["Resource"]), "AdmittedQueue"))
	}
	if !send {
		t.Error("the queue service may not send to the admitted queue")
	}
	// Configured events only: the service reads its settings from Tier 1's events table.
	settings := false
	for _, st := range statements(t2) {
		acts := asList(st["Action"])
		settings = settings || (slices.Contains(acts, any("dynamodb:Scan")) && slices.Contains(acts, any("dynamodb:GetItem")) &&
			strings.Contains(js(st["Resource"]), "EventsTable"))
	}
	if !settings {
		t.Error("the queue service may not read its event settings from the events table")
	}
	for _, td := range t2.resources("AWS::ECS::TaskDefinition") {
		env := js(get(td, "Properties", "ContainerDefinitions"))
		for _, name := range []string{"VWR_TIER1_STORE", "VWR_TIER1_EVENTS_TABLE", "VWR_TIER1_POSITIONS_TABLE"} {
			if !strings.Contains(env, name) {
				t.Errorf("queue container lacks %s", name)
			}
		}
	}
	if _, ok := get(t2, "Parameters", "QueueImageTag").(map[string]any); !ok {
		t.Error("no QueueImageTag parameter: synthesis would need Docker")
	}
}

// TestCrossRegion: the front door in us-east-1 reads the Tier 1 API and the
// Tier 2 ALB from another region through CDK's cross-region references.
func TestCrossRegion(t *testing.T) {
	s := synth(t)
	if *s.app.Tier1.Region() != testRegion || *s.app.FrontDoor.Region() != FrontDoorRegion {
		t.Fatalf("regions: tier 1 %s, front door %s", *s.app.Tier1.Region(), *s.app.FrontDoor.Region())
	}
	if len(s.templates["Tier1"].resources("Custom::CrossRegionExportWriter")) != 1 || len(s.templates["Tier2"].resources("Custom::CrossRegionExportWriter")) != 1 {
		t.Error("Tier 1 and Tier 2 must each write their exports for us-east-1")
	}
	readers := s.templates["FrontDoor"].resources("Custom::CrossRegionExportReader")
	if len(readers) != 1 {
		t.Fatalf("%d export readers in the front door", len(readers))
	}
	if strings.Contains(js(s.templates["FrontDoor"]), "Fn::ImportValue") {
		t.Error("the front door imports a value with Fn::ImportValue, which cannot cross regions")
	}
	for _, o := range get(s.templates["FrontDoor"], "Resources").(map[string]any) {
		if get(o, "Type") != "AWS::CloudFront::Distribution" {
			continue
		}
		if !strings.Contains(js(get(o, "Properties", "DistributionConfig", "Origins")), "ExportsReader") {
			t.Error("the distribution's API origin does not come from the export reader")
		}
	}
}

// TestConfigValidation: the context keys are read and checked, naming the key.
func TestConfigValidation(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "vwr:protectedOrigin") {
		t.Fatalf("missing origin: %v", err)
	}
	c.ProtectedOrigin = "shop.example.com"
	c.AdvancerTicks, c.AdvancerTickSeconds = 12, 10
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "vwr:advancerTickSeconds") {
		t.Fatalf("a run longer than the minute: %v", err)
	}
	c.AdvancerTicks = 6
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]interface{}{
		"vwr:protectedOrigin": "www.example.org", "vwr:advancerTicks": 3, "vwr:tier2": "false",
	}, Outdir: jsii.String(t.TempDir())})
	got, err := ConfigFromContext(app)
	if err != nil || got.ProtectedOrigin != "www.example.org" || got.AdvancerTicks != 3 || got.Tier2 {
		t.Fatalf("context: %+v, %v", got, err)
	}
}

// TestTier2OriginLockedToCloudFront: with vwr:cloudFrontPrefixList the load
// balancer admits only CloudFront's origin-facing servers; without it, the
// world (docs/deploy.md says so).
func TestTier2OriginLockedToCloudFront(t *testing.T) {
	// ingress lists the load balancer's inbound rules, inline or separate,
	// as "cidr|prefix list:port".
	ingress := func(c cfn) string {
		var out []string
		rule := func(r any) {
			src := get(r, "CidrIp")
			if src == nil {
				src = get(r, "SourcePrefixListId")
			}
			out = append(out, fmt.Sprintf("%v:%v", src, get(r, "FromPort")))
		}
		for id, sg := range c.resources("AWS::EC2::SecurityGroup") {
			if !strings.Contains(js(get(sg, "Properties", "GroupDescription")), "QueueLB") {
				continue
			}
			if inline, ok := get(sg, "Properties", "SecurityGroupIngress").([]any); ok {
				for _, r := range inline {
					rule(r)
				}
			}
			for _, r := range c.resources("AWS::EC2::SecurityGroupIngress") {
				if get(r, "Properties", "GroupId", "Fn::GetAtt", 0) == id {
					rule(r["Properties"])
				}
			}
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}
	// By default the id is looked up at deploy time, by name.
	t2 := synth(t).templates["Tier2"]
	lookupID, lookup := t2.byConstruct("Custom::AWS", "CloudFrontPrefixList")
	if lookup == nil || !strings.Contains(js(get(lookup, "Properties", "Create")), CloudFrontOriginFacing) {
		t.Fatalf("no deploy-time lookup of %s: %s", CloudFrontOriginFacing, js(lookup))
	}
	if got := ingress(t2); got != fmt.Sprintf("map[Fn::GetAtt:[%s PrefixLists.0.PrefixListId]]:80", lookupID) {
		t.Errorf("default load balancer ingress %q, want only the looked-up prefix list", got)
	}
	cfg := testConfig(t)
	cfg.OriginPrefixList = "pl-3b927c52"
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	v := NewVWR(app, cfg)
	b, err := json.Marshal(*assertions.Template_FromStack(v.Tier2.Stack, nil).ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	var locked cfn
	if err := json.Unmarshal(b, &locked); err != nil {
		t.Fatal(err)
	}
	if got := ingress(locked); got != "pl-3b927c52:80" {
		t.Errorf("locked load balancer ingress %q", got)
	}
}
