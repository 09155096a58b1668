package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdadestinations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/vwr-go/vwr/internal/tier1/tier1api"
)

// Tier1StackProps configures the Tier 1 stack.
type Tier1StackProps struct {
	awscdk.StackProps
	// LambdaDir holds <fn>/bootstrap for every lambdas/<fn> (`make lambdas`).
	LambdaDir string
	// AdvancerTicks × AdvancerTickSeconds is one scheduled run's length.
	AdvancerTicks, AdvancerTickSeconds int
	// AdvancerReservedConcurrency reserves concurrency for the advancer
	// when above 0 (Config.AdvancerReservedConcurrency).
	AdvancerReservedConcurrency int
}

// Tier1Stack is the serverless front door's back end: the HTTP API, one Go
// Lambda per route group, the DynamoDB tables, the advancer's schedule, the
// SQS "admitted" queue and its consumer, and the pass-key secret. It is the
// CDK twin of template.yaml (parity_test.go keeps them equal).
type Tier1Stack struct {
	awscdk.Stack
	API                                  awsapigatewayv2.HttpApi
	Functions                            map[string]awslambda.Function // by construct id, e.g. AssignFunction
	Events, Positions, Processed, Stats  awsdynamodb.Table
	AdmittedQueue, AdmittedDLQ, Failures awssqs.Queue
	KeysSecret                           awssecretsmanager.Secret
	// OriginVerify is the value CloudFront adds to every request it sends
	// an origin (X-Vwr-Origin-Verify), under OriginVerifyName, replicated
	// to us-east-1 where the front door reads it.
	OriginVerify     awssecretsmanager.Secret
	OriginVerifyName string
	// API429 counts the API's 429 answers, from its access log.
	API429 awscloudwatch.Metric
}

// lambdaSpec is one function: its construct id (template.yaml's logical id),
// its lambdas/<dir>, and the routes it serves.
type lambdaSpec struct {
	ID, Dir, Description string
	Timeout              float64
	// Memory in MB; 0 means 256. A scheduled sale's close and draw hold the
	// ticket list in memory: 32 bytes a ticket plus 12 while ordering
	// (docs/draw.md; BENCHMARKS.md measures 10 M tickets in 1,024 MB).
	Memory float64
	Routes []string
}

// Tier1Functions are the stack's functions. The routes are the handlers'
// own constants (tier1api), so a route a handler registers and no function
// serves shows up in the parity and assertion tests.
var Tier1Functions = []lambdaSpec{
	{ID: "AssignFunction", Dir: "assign", Description: "POST /vwr/assign/{eventId}: hand out a position; GET /vwr/challenge/{eventId}: its proof-of-work challenge", Timeout: 10, Routes: tier1api.AssignRoutes},
	{ID: "CheckFunction", Dir: "check", Description: "GET /vwr/check/{eventId}/{requestId}: admit a served visitor", Timeout: 10, Routes: []string{tier1api.RouteCheck}},
	{ID: "StatusFunction", Dir: "status", Description: "GET /vwr/status/{eventId}: CDN-cacheable event status", Timeout: 10, Routes: []string{tier1api.RouteStatus}},
	{ID: "DrawFunction", Dir: "draw", Description: "GET /vwr/draw/*: a scheduled sale's verifiable draw (CDN-cacheable, immutable once drawn)", Timeout: 29, Memory: 1024, Routes: []string{tier1api.RouteDraw, tier1api.RouteDrawChunk, tier1api.RouteDrawProof}},
	{ID: "AdminFunction", Dir: "admin", Description: "/vwr/admin/*: operator routes (AWS_IAM)", Timeout: 10, Routes: tier1api.AdminRoutes},
	{ID: "AdvancerFunction", Dir: "advancer", Description: "Scheduled serving-counter advancer", Timeout: 0, Memory: 1024}, // set from the ticks
	{ID: "AdmittedConsumerFunction", Dir: "admitted-consumer", Description: "Counts each SQS admitted notification once per event and minute", Timeout: 10},
}

// MetricAPI429 is the metric the access log's 429s become (vwr/tier1).
const MetricAPI429 = "Api429"

// AdvancerDrawHeadroomSeconds is what the advancer's timeout adds to its
// ticks for a scheduled sale's close or draw (template.yaml: 300 s).
const AdvancerDrawHeadroomSeconds = 240

// ConsumerTimeoutSeconds is the consumer's timeout; the queue's visibility
// timeout is six times it, as AWS advises for SQS event sources.
const ConsumerTimeoutSeconds = 10

// NewTier1Stack builds the stack.
func NewTier1Stack(scope constructs.Construct, id string, props *Tier1StackProps) *Tier1Stack {
	sp := props.StackProps
	sp.Description = jsii.String("vwr Tier 1: HTTP API, Go Lambdas, DynamoDB, advancer schedule, SQS admitted queue")
	stack := awscdk.NewStack(scope, &id, &sp)
	s := &Tier1Stack{Stack: stack, Functions: map[string]awslambda.Function{}}

	warmRead := awscdk.NewCfnParameter(stack, jsii.String("EventsTableWarmReadUnits"), &awscdk.CfnParameterProps{
		Type: jsii.String("Number"), Default: 12000, MinValue: jsii.Number(12000),
		Description: jsii.String("Warm throughput (reads/s) of the events table, so a sale does not start on a cold table"),
	})
	warmWrite := awscdk.NewCfnParameter(stack, jsii.String("EventsTableWarmWriteUnits"), &awscdk.CfnParameterProps{
		Type: jsii.String("Number"), Default: 4000, MinValue: jsii.Number(4000),
		Description: jsii.String("Warm throughput (writes/s) of the events table"),
	})

	// Tables. Events and positions hold the sale: kept on stack deletion,
	// with point-in-time recovery. The consumer's tables are counters.
	str := awsdynamodb.AttributeType_STRING
	pitr := &awsdynamodb.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: jsii.Bool(true)}
	s.Events = awsdynamodb.NewTable(stack, jsii.String("EventsTable"), &awsdynamodb.TableProps{
		PartitionKey:                     &awsdynamodb.Attribute{Name: jsii.String("pk"), Type: str},
		SortKey:                          &awsdynamodb.Attribute{Name: jsii.String("sk"), Type: str},
		BillingMode:                      awsdynamodb.BillingMode_PAY_PER_REQUEST,
		Encryption:                       awsdynamodb.TableEncryption_AWS_MANAGED,
		PointInTimeRecoverySpecification: pitr,
		RemovalPolicy:                    awscdk.RemovalPolicy_RETAIN,
		WarmThroughput: &awsdynamodb.WarmThroughput{
			ReadUnitsPerSecond:  warmRead.ValueAsNumber(),
			WriteUnitsPerSecond: warmWrite.ValueAsNumber(),
		},
	})
	s.Positions = awsdynamodb.NewTable(stack, jsii.String("PositionsTable"), &awsdynamodb.TableProps{
		PartitionKey:                     &awsdynamodb.Attribute{Name: jsii.String("requestId"), Type: str},
		BillingMode:                      awsdynamodb.BillingMode_PAY_PER_REQUEST,
		Encryption:                       awsdynamodb.TableEncryption_AWS_MANAGED,
		TimeToLiveAttribute:              jsii.String("ttl"),
		PointInTimeRecoverySpecification: pitr,
		RemovalPolicy:                    awscdk.RemovalPolicy_RETAIN,
	})
	s.Processed = awsdynamodb.NewTable(stack, jsii.String("AdmittedProcessedTable"), &awsdynamodb.TableProps{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String("id"), Type: str},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		Encryption:          awsdynamodb.TableEncryption_AWS_MANAGED,
		TimeToLiveAttribute: jsii.String("ttl"),
		RemovalPolicy:       awscdk.RemovalPolicy_DESTROY,
	})
	s.Stats = awsdynamodb.NewTable(stack, jsii.String("AdmittedStatsTable"), &awsdynamodb.TableProps{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String("eventId"), Type: str},
		SortKey:             &awsdynamodb.Attribute{Name: jsii.String("minute"), Type: awsdynamodb.AttributeType_NUMBER},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		Encryption:          awsdynamodb.TableEncryption_AWS_MANAGED,
		TimeToLiveAttribute: jsii.String("ttl"),
		RemovalPolicy:       awscdk.RemovalPolicy_DESTROY,
	})

	// Queues: the FIFO "admitted" queue, its FIFO DLQ, and where failed
	// advancer runs land.
	s.AdmittedDLQ = awssqs.NewQueue(stack, jsii.String("AdmittedDLQ"), &awssqs.QueueProps{
		QueueName:       jsii.String(*stack.StackName() + "-admitted-dlq.fifo"),
		Fifo:            jsii.Bool(true),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	s.AdmittedQueue = awssqs.NewQueue(stack, jsii.String("AdmittedQueue"), &awssqs.QueueProps{
		QueueName:                 jsii.String(*stack.StackName() + "-admitted.fifo"),
		Fifo:                      jsii.Bool(true),
		ContentBasedDeduplication: jsii.Bool(false), // the publisher sets the deduplication id
		Encryption:                awssqs.QueueEncryption_SQS_MANAGED,
		VisibilityTimeout:         awscdk.Duration_Seconds(jsii.Number(6 * ConsumerTimeoutSeconds)),
		RetentionPeriod:           awscdk.Duration_Days(jsii.Number(4)),
		DeadLetterQueue:           &awssqs.DeadLetterQueue{Queue: s.AdmittedDLQ, MaxReceiveCount: jsii.Number(5)},
	})
	s.Failures = awssqs.NewQueue(stack, jsii.String("AdvancerFailureQueue"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})

	// The pass keys: generated as {"kid":"k1","secret":…}; a rotation writes
	// {"keys":[…]} (docs/deploy.md, key rotation). Only assign and check may read it,
	// and the Tier 2 task's execution role, which injects it.
	s.KeysSecret = awssecretsmanager.NewSecret(stack, jsii.String("Tier1KeysSecret"), &awssecretsmanager.SecretProps{
		Description: jsii.String(`vwr Tier 1 pass keys (HS256): {"kid","secret"} or {"keys":[…]}`),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			SecretStringTemplate: jsii.String(`{"kid":"k1"}`),
			GenerateStringKey:    jsii.String("secret"),
			PasswordLength:       jsii.Number(48),
			ExcludePunctuation:   jsii.Bool(true),
		},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})

	// The origin-verify value: CloudFront sends it to every origin, so the
	// protected site's gate can refuse whoever goes around the front door
	// (docs/gate.md). The front door, in us-east-1, reads it by name there.
	s.OriginVerifyName = "vwr/" + *stack.StackName() + "/origin-verify"
	ovProps := &awssecretsmanager.SecretProps{
		SecretName:  jsii.String(s.OriginVerifyName),
		Description: jsii.String(`vwr origin-verify header value {"value":…}: CloudFront sends it as X-Vwr-Origin-Verify`),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			SecretStringTemplate: jsii.String(`{}`),
			GenerateStringKey:    jsii.String("value"),
			PasswordLength:       jsii.Number(48),
			ExcludePunctuation:   jsii.Bool(true),
		},
	}
	if r := props.Env; r == nil || r.Region == nil || *r.Region != FrontDoorRegion {
		ovProps.ReplicaRegions = &[]*awssecretsmanager.ReplicaRegion{{Region: jsii.String(FrontDoorRegion)}}
	}
	s.OriginVerify = awssecretsmanager.NewSecret(stack, jsii.String("OriginVerifySecret"), ovProps)

	// The functions. Every one gets the same base environment as
	// template.yaml's Globals; names only, no key material.
	// Ticks × seconds, plus four minutes for the tick that closes or draws
	// a pre-queue of millions (BENCHMARKS.md, "Draw: close and draw at
	// scale"). An overlapping run only competes for the same conditional
	// writes.
	advancerTimeout := float64(props.AdvancerTicks*props.AdvancerTickSeconds + AdvancerDrawHeadroomSeconds)
	for _, spec := range Tier1Functions {
		timeout := spec.Timeout
		if spec.ID == "AdvancerFunction" {
			timeout = advancerTimeout
		}
		memory := spec.Memory
		if memory == 0 {
			memory = 256
		}
		logs := awslogs.NewLogGroup(stack, jsii.String(strings.TrimSuffix(spec.ID, "Function")+"LogGroup"), &awslogs.LogGroupProps{
			Retention:     awslogs.RetentionDays_TWO_WEEKS,
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		})
		env := map[string]*string{
			"VWR_TIER1_STORE":           jsii.String("dynamodb"),
			"VWR_TIER1_EVENTS_TABLE":    s.Events.TableName(),
			"VWR_TIER1_POSITIONS_TABLE": s.Positions.TableName(),
			"ADVANCER_TICK_SECONDS":     jsii.String(fmt.Sprint(props.AdvancerTickSeconds)),
		}
		fp := &awslambda.FunctionProps{
			Description:  jsii.String(spec.Description),
			Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
			Architecture: awslambda.Architecture_ARM_64(),
			Handler:      jsii.String("bootstrap"),
			Code:         awslambda.Code_FromAsset(jsii.String(filepath.Join(props.LambdaDir, spec.Dir)), nil),
			MemorySize:   jsii.Number(memory),
			Timeout:      awscdk.Duration_Seconds(jsii.Number(timeout)),
			LogGroup:     logs,
			Environment:  &env,
		}
		if spec.ID == "AdvancerFunction" {
			// Overlapping runs are safe (each tick slot is raised once), so
			// no concurrency is reserved unless asked: a new account's quota
			// of 10 cannot spare it. A failed run is not retried (next
			// minute's run is the retry) and lands on the failure queue.
			if props.AdvancerReservedConcurrency > 0 {
				fp.ReservedConcurrentExecutions = jsii.Number(float64(props.AdvancerReservedConcurrency))
			}
			fp.RetryAttempts = jsii.Number(0)
			fp.OnFailure = awslambdadestinations.NewSqsDestination(s.Failures)
		}
		s.Functions[spec.ID] = awslambda.NewFunction(stack, jsii.String(spec.ID), fp)
	}
	fn := s.Functions
	allow := func(f awslambda.Function, arn *string, actions ...string) {
		f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings(actions...), Resources: jsii.Strings(*arn),
		}))
	}
	// Only the calls each function makes (internal/tier1/dynamostore,
	// internal/admitted), on its named tables: the same grants as template.yaml.
	allow(fn["AssignFunction"], s.Events.TableArn(), "dynamodb:BatchGetItem", "dynamodb:UpdateItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query")
	// UpdateItem on positions: the per-client counters (docs/bots.md).
	allow(fn["AssignFunction"], s.Positions.TableArn(), "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem")
	allow(fn["CheckFunction"], s.Events.TableArn(), "dynamodb:BatchGetItem", "dynamodb:GetItem")
	allow(fn["DrawFunction"], s.Events.TableArn(), "dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:BatchWriteItem")
	allow(fn["CheckFunction"], s.Positions.TableArn(), "dynamodb:GetItem")
	allow(fn["StatusFunction"], s.Events.TableArn(), "dynamodb:BatchGetItem")
	allow(fn["AdminFunction"], s.Events.TableArn(), "dynamodb:BatchGetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:Query")
	allow(fn["AdminFunction"], s.Stats.TableArn(), "dynamodb:Query")
	allow(fn["AdvancerFunction"], s.Events.TableArn(), "dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:BatchWriteItem")
	allow(fn["AdmittedConsumerFunction"], s.Processed.TableArn(), "dynamodb:PutItem")
	allow(fn["AdmittedConsumerFunction"], s.Stats.TableArn(), "dynamodb:UpdateItem")
	for _, id := range []string{"AssignFunction", "CheckFunction"} {
		fn[id].AddEnvironment(jsii.String("VWR_TIER1_TOKEN_KEYS_SECRET_ARN"), s.KeysSecret.SecretArn(), nil)
		allow(fn[id], s.KeysSecret.SecretArn(), "secretsmanager:GetSecretValue")
	}
	// The per-client bound counts by the viewer address CloudFront sets; the
	// front door forwards it to the API (docs/bots.md).
	fn["AssignFunction"].AddEnvironment(jsii.String("VWR_TIER1_CLIENT_IP_HEADER"), jsii.String(tier1api.ViewerAddressHeader), nil)
	// The visitor routes answer only requests that carry CloudFront's
	// origin-verify header: the execute-api endpoint is no way around the
	// front door and its WAF.
	for _, id := range []string{"AssignFunction", "CheckFunction", "StatusFunction", "DrawFunction"} {
		fn[id].AddEnvironment(jsii.String("VWR_ORIGIN_VERIFY_SECRET_ARN"), s.OriginVerify.SecretArn(), nil)
		allow(fn[id], s.OriginVerify.SecretArn(), "secretsmanager:GetSecretValue")
	}
	fn["AdminFunction"].AddEnvironment(jsii.String("VWR_ADMITTED_STATS_TABLE"), s.Stats.TableName(), nil)
	fn["AdvancerFunction"].AddEnvironment(jsii.String("ADVANCER_TICKS"), jsii.String(fmt.Sprint(props.AdvancerTicks)), nil)
	fn["AdmittedConsumerFunction"].AddEnvironment(jsii.String("VWR_ADMITTED_PROCESSED_TABLE"), s.Processed.TableName(), nil)
	fn["AdmittedConsumerFunction"].AddEnvironment(jsii.String("VWR_ADMITTED_STATS_TABLE"), s.Stats.TableName(), nil)

	// The consumer reads its queue (the event source grants receive and
	// delete on this queue only) and reports partial batch failures.
	fn["AdmittedConsumerFunction"].AddEventSource(awslambdaeventsources.NewSqsEventSource(s.AdmittedQueue, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(10),
		ReportBatchItemFailures: jsii.Bool(true),
	}))

	// The advancer runs every minute.
	awsevents.NewRule(stack, jsii.String("AdvancerSchedule"), &awsevents.RuleProps{
		Description: jsii.String("vwr Tier 1 serving-counter advancer"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		Targets:     &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(fn["AdvancerFunction"], &awseventstargets.LambdaFunctionProps{RetryAttempts: jsii.Number(0)})},
	})

	// The HTTP API, with access logs and throttling on its default stage.
	s.API = awsapigatewayv2.NewHttpApi(stack, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiProps{
		Description: jsii.String("vwr Tier 1 API"),
	})
	accessLogs := awslogs.NewLogGroup(stack, jsii.String("ApiAccessLogGroup"), &awslogs.LogGroupProps{
		Retention: awslogs.RetentionDays_TWO_WEEKS, RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	stage := s.API.DefaultStage().Node().DefaultChild().(awsapigatewayv2.CfnStage)
	stage.SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: accessLogs.LogGroupArn(),
		Format:         jsii.String(`{"requestId":"$context.requestId","ip":"$context.identity.sourceIp","method":"$context.httpMethod","route":"$context.routeKey","status":"$context.status","latencyMs":"$context.responseLatency","integrationError":"$context.integrationErrorMessage"}`),
	})
	// 429s (the stage's throttle, or a handler's per-client bound) as a
	// metric, from the access log: the HTTP API's own metrics fold them
	// into 4xx.
	awslogs.NewMetricFilter(stack, jsii.String("Api429Filter"), &awslogs.MetricFilterProps{
		LogGroup:        accessLogs,
		FilterPattern:   awslogs.FilterPattern_StringValue(jsii.String("$.status"), jsii.String("="), jsii.String("429")),
		MetricNamespace: jsii.String(tier1api.Namespace),
		MetricName:      jsii.String(MetricAPI429),
		MetricValue:     jsii.String("1"),
		DefaultValue:    jsii.Number(0),
	})
	s.API429 = awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String(tier1api.Namespace), MetricName: jsii.String(MetricAPI429),
		Period: awscdk.Duration_Minutes(jsii.Number(1)), Statistic: jsii.String("Sum"),
	})
	stage.SetDefaultRouteSettings(&awsapigatewayv2.CfnStage_RouteSettingsProperty{
		ThrottlingBurstLimit: jsii.Number(5000),
		ThrottlingRateLimit:  jsii.Number(10000),
	})
	iam := awsapigatewayv2authorizers.NewHttpIamAuthorizer()
	for _, spec := range Tier1Functions {
		if len(spec.Routes) == 0 {
			continue
		}
		integration := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String(spec.ID+"Integration"), fn[spec.ID], nil)
		for _, r := range spec.Routes {
			method, path, _ := strings.Cut(r, " ")
			opts := &awsapigatewayv2.AddRoutesOptions{
				Path:        jsii.String(path),
				Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod(method)},
				Integration: integration,
			}
			if isAdminRoute(r) {
				opts.Authorizer = iam
			}
			s.API.AddRoutes(opts)
		}
	}

	out := func(id string, v *string, desc string) {
		awscdk.NewCfnOutput(stack, jsii.String(id), &awscdk.CfnOutputProps{Value: v, Description: jsii.String(desc)})
	}
	out("ApiUrl", s.API.ApiEndpoint(), "Tier 1 HTTP API base URL (CloudFront's /vwr-api/* origin)")
	out("AdmittedQueueUrl", s.AdmittedQueue.QueueUrl(), "SQS_QUEUE_URL for the Tier 2 queue service")
	out("Tier1KeysSecretArn", s.KeysSecret.SecretArn(), "Pass keys: vwr admin edge-keys sync copies them to the edge (make deploy runs it)")
	out("OriginVerifySecretName", jsii.String(s.OriginVerifyName), "X-Vwr-Origin-Verify value CloudFront sends the origins (field value; QUEUE_GATE_ORIGIN_VERIFY)")
	return s
}

// isAdminRoute reports whether a route is an operator route (AWS_IAM).
func isAdminRoute(r string) bool {
	for _, a := range tier1api.AdminRoutes {
		if a == r {
			return true
		}
	}
	return false
}
