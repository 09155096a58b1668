package main

import (
	"fmt"
	"sort"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticloadbalancingv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/vwr-go/vwr/internal/tier1/tier1api"
)

// OpsStackProps names what the alarms watch. Tier2 may be nil.
type OpsStackProps struct {
	awscdk.StackProps
	Tier1 *Tier1Stack
	Tier2 *Tier2Stack
}

// OpsStack is the operator's view: an SNS topic every alarm notifies, the
// alarms, and a dashboard of a sale.
type OpsStack struct {
	awscdk.Stack
	Topic     awssns.Topic
	Alarms    map[string]awscloudwatch.Alarm // by construct id
	Dashboard awscloudwatch.Dashboard
}

// tier1Operations are the DynamoDB calls the Tier 1 store makes
// (internal/tier1/dynamostore): the ones whose throttling matters.
var tier1Operations = []awsdynamodb.Operation{
	awsdynamodb.Operation_GET_ITEM, awsdynamodb.Operation_BATCH_GET_ITEM, awsdynamodb.Operation_PUT_ITEM,
	awsdynamodb.Operation_UPDATE_ITEM, awsdynamodb.Operation_DELETE_ITEM,
}

// NewOpsStack builds the stack.
func NewOpsStack(scope constructs.Construct, id string, props *OpsStackProps) *OpsStack {
	sp := props.StackProps
	sp.Description = jsii.String("vwr operations: alarms to SNS, sale dashboard")
	stack := awscdk.NewStack(scope, &id, &sp)
	s := &OpsStack{Stack: stack, Alarms: map[string]awscloudwatch.Alarm{}}
	s.Topic = awssns.NewTopic(stack, jsii.String("Alarms"), &awssns.TopicProps{DisplayName: jsii.String("vwr alarms")})
	notify := awscloudwatchactions.NewSnsAction(s.Topic)
	t1 := props.Tier1
	minute := awscdk.Duration_Minutes(jsii.Number(1))

	alarm := func(id, desc string, m awscloudwatch.IMetric, threshold float64) {
		a := awscloudwatch.NewAlarm(stack, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(desc),
			Metric:             m,
			Threshold:          jsii.Number(threshold),
			EvaluationPeriods:  jsii.Number(1),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		a.AddAlarmAction(notify)
		s.Alarms[id] = a
	}
	sum := &awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Sum")}
	max := &awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Maximum")}

	alarm("AdmittedDLQDepth", "Admitted notices the consumer gave up on are waiting in the DLQ",
		t1.AdmittedDLQ.MetricApproximateNumberOfMessagesVisible(max), 0)
	alarm("AdvancerFailures", "A scheduled advancer run failed (its event is on the failure queue)",
		t1.Failures.MetricApproximateNumberOfMessagesVisible(max), 0)
	ids := make([]string, 0, len(t1.Functions))
	for id := range t1.Functions {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fn := t1.Functions[id]
		alarm(id+"Errors", id+" returned errors", fn.MetricErrors(sum), 0)
		alarm(id+"Throttles", id+" was throttled by Lambda", fn.MetricThrottles(sum), 0)
	}
	alarm("Api5xx", "The Tier 1 HTTP API answered 5xx", t1.API.MetricServerError(sum), 0)
	for _, t := range []struct {
		name  string
		table awsdynamodb.Table
	}{{"Events", t1.Events}, {"Positions", t1.Positions}} {
		alarm(t.name+"TableThrottles", "DynamoDB throttled requests on the "+t.name+" table",
			t.table.MetricThrottledRequestsForOperations(&awsdynamodb.OperationsMetricOptions{Period: minute, Operations: &tier1Operations}), 0)
	}
	// The handlers' own count of store throttles (EMF, namespace vwr/tier1).
	alarm("Tier1StoreThrottles", "Tier 1 handlers saw store throttling (vwr/tier1 Throttles)",
		awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String(tier1api.Namespace), MetricName: jsii.String(tier1api.MetricThrottles),
			DimensionsMap: &map[string]*string{tier1api.MetricDimension: jsii.String(tier1api.AllEvents)},
			Period:        minute, Statistic: jsii.String("Sum"),
		}), 0)

	if t2 := props.Tier2; t2 != nil {
		lb := t2.Service.LoadBalancer()
		alarm("Tier2Target5xx", "The Tier 2 queue service answered 5xx",
			lb.Metrics().HttpCodeTarget(awselasticloadbalancingv2.HttpCodeTarget_TARGET_5XX_COUNT, sum), 0)
		alarm("Tier2Elb5xx", "The Tier 2 load balancer answered 5xx itself",
			lb.Metrics().HttpCodeElb(awselasticloadbalancingv2.HttpCodeElb_ELB_5XX_COUNT, sum), 0)
		for shard := 1; shard <= t2.Shards; shard++ {
			node := fmt.Sprintf("%04d-001", shard)
			cache := func(metric string) awscloudwatch.Metric {
				return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
					Namespace: jsii.String("AWS/ElastiCache"), MetricName: jsii.String(metric),
					DimensionsMap: &map[string]*string{"CacheClusterId": awscdk.Fn_Join(jsii.String("-"), jsii.Strings(*t2.Cache.Ref(), node))},
					Period:        awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Maximum"),
				})
			}
			alarm(fmt.Sprintf("CacheMemoryShard%d", shard), "ElastiCache memory above 80% on shard "+fmt.Sprint(shard), cache("DatabaseMemoryUsagePercentage"), 80)
			alarm(fmt.Sprintf("CacheCpuShard%d", shard), "ElastiCache engine CPU above 80% on shard "+fmt.Sprint(shard), cache("EngineCPUUtilization"), 80)
		}
	}

	// The dashboard of a sale.
	tier1 := func(name, stat string) awscloudwatch.Metric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String(tier1api.Namespace), MetricName: jsii.String(name),
			DimensionsMap: &map[string]*string{tier1api.MetricDimension: jsii.String(tier1api.AllEvents)},
			Period:        minute, Statistic: jsii.String(stat),
		})
	}
	s.Dashboard = awscloudwatch.NewDashboard(stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{DefaultInterval: awscdk.Duration_Hours(jsii.Number(3))})
	s.Dashboard.AddWidgets(
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String("Queue length (assigned − serving counter)"), Width: jsii.Number(12),
			Left: &[]awscloudwatch.IMetric{awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
				Expression: jsii.String("a - s"), Label: jsii.String("waiting"), Period: minute,
				UsingMetrics: &map[string]awscloudwatch.IMetric{"a": tier1(tier1api.MetricAssignments, "Sum"), "s": tier1(tier1api.MetricServingCounter, "Maximum")},
			})},
		}),
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String("Admissions per minute"), Width: jsii.Number(12),
			Left: &[]awscloudwatch.IMetric{tier1(tier1api.MetricAdmissions, "Sum"), tier1(tier1api.MetricReleased, "Sum")},
		}),
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String("Serving counter vs assigned"), Width: jsii.Number(12),
			Left: &[]awscloudwatch.IMetric{tier1(tier1api.MetricServingCounter, "Maximum"), tier1(tier1api.MetricAssignments, "Sum")},
		}),
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String("p99 latency"), Width: jsii.Number(12),
			Left: &[]awscloudwatch.IMetric{
				t1.API.MetricLatency(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("p99")}),
				t1.Functions["AssignFunction"].MetricDuration(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("p99")}),
			},
		}),
	)
	awscdk.NewCfnOutput(stack, jsii.String("AlarmTopicArn"), &awscdk.CfnOutputProps{
		Value: s.Topic.TopicArn(), Description: jsii.String("Subscribe the on-call address here"),
	})
	return s
}
