package main

import (
	"fmt"
	"sort"
	"strings"

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
	Tier1     *Tier1Stack
	Tier2     *Tier2Stack
	FrontDoor *FrontDoorStack
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

// Alarm thresholds that are not zero.
const (
	// Api429PerMinute 429s a minute, three minutes running, is a throttled API.
	Api429PerMinute = 100
	// AdmittedMaxAgeSeconds is how long an admitted notice may wait in SQS.
	AdmittedMaxAgeSeconds = 300
)

// tier1All is a vwr/tier1 metric summed over every event: the series
// without dimensions that internal/emf writes beside each event's.
func tier1All(name, stat string) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String(tier1api.Namespace), MetricName: jsii.String(name),
		Period: awscdk.Duration_Minutes(jsii.Number(1)), Statistic: jsii.String(stat),
	})
}

// tier1PerEvent is a SEARCH over every event's series of a vwr/tier1
// metric: one line per event, whichever events exist.
func tier1PerEvent(name, stat, label string) awscloudwatch.MathExpression {
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf(`SEARCH('{%s,%s} MetricName="%s"', '%s', 60)`, tier1api.Namespace, tier1api.MetricDimension, name, stat)),
		Label:      jsii.String(label), Period: awscdk.Duration_Minutes(jsii.Number(1)),
	})
}

// cacheNode is one ElastiCache node's metric: node n of shard s is
// <replication group>-000s-00n.
func cacheNode(t2 *Tier2Stack, shard, node int, metric string) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String("AWS/ElastiCache"), MetricName: jsii.String(metric),
		DimensionsMap: &map[string]*string{"CacheClusterId": awscdk.Fn_Join(jsii.String("-"), jsii.Strings(*t2.Cache.Ref(), fmt.Sprintf("%04d-%03d", shard, node)))},
		Period:        awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Maximum"),
	})
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
	// alarmOver alarms when m exceeds threshold for `periods` periods in a row.
	alarmOver := func(id, desc string, m awscloudwatch.IMetric, threshold, periods float64) {
		a := awscloudwatch.NewAlarm(stack, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(desc),
			Metric:             m,
			Threshold:          jsii.Number(threshold),
			EvaluationPeriods:  jsii.Number(periods),
			DatapointsToAlarm:  jsii.Number(periods),
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
	// The handlers' own count of store throttles (EMF, namespace vwr/tier1),
	// summed over events: the metric without dimensions (internal/emf
	// writes every value both per event and without one).
	alarm("Tier1StoreThrottles", "Tier 1 handlers saw store throttling (vwr/tier1 Throttles)", tier1All(tier1api.MetricThrottles, "Sum"), 0)
	alarmOver("Api429", "The Tier 1 API answered more than 100 429s a minute for 3 minutes (its throttle, or bots at the per-client bound)",
		t1.API429, Api429PerMinute, 3)
	alarmOver("AdmittedOldestAge", "An admitted notice has waited more than 5 minutes in the queue (the consumer is behind or failing)",
		t1.AdmittedQueue.MetricApproximateAgeOfOldestMessage(max), AdmittedMaxAgeSeconds, 1)
	// A stalled serving counter while people wait: each advancer tick
	// reports how many events have a line (EventsWaiting) and how many it let
	// through (Released); a minute with a line and nobody let through is
	// stalled, five in a row alarm. An advancer that does not run at all
	// reports nothing, which AdvancerNotRunning catches.
	stalled := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("IF(FILL(w, 0) > 0 AND FILL(r, 0) <= 0, 1, 0)"), Label: jsii.String("stalled minutes"), Period: minute,
		UsingMetrics: &map[string]awscloudwatch.IMetric{"w": tier1All(tier1api.MetricEventsWaiting, "Maximum"), "r": tier1All(tier1api.MetricReleased, "Sum")},
	})
	alarmOver("ServingCounterStalled", "People wait in Tier 1 but the serving counter has not moved for 5 minutes (advancer failing, store throttled, or the event paused by mistake)",
		stalled, 0, 5)
	notRunning := awscloudwatch.NewAlarm(stack, jsii.String("AdvancerNotRunning"), &awscloudwatch.AlarmProps{
		AlarmDescription:   jsii.String("The advancer was not invoked for 3 minutes (schedule disabled or Lambda failing to start): nobody moves up"),
		Metric:             t1.Functions["AdvancerFunction"].MetricInvocations(sum),
		Threshold:          jsii.Number(1),
		EvaluationPeriods:  jsii.Number(3),
		ComparisonOperator: awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_BREACHING,
	})
	notRunning.AddAlarmAction(notify)
	s.Alarms["AdvancerNotRunning"] = notRunning

	if t2 := props.Tier2; t2 != nil {
		lb := t2.Service.LoadBalancer()
		alarm("Tier2Target5xx", "The Tier 2 queue service answered 5xx",
			lb.Metrics().HttpCodeTarget(awselasticloadbalancingv2.HttpCodeTarget_TARGET_5XX_COUNT, sum), 0)
		alarm("Tier2Elb5xx", "The Tier 2 load balancer answered 5xx itself",
			lb.Metrics().HttpCodeElb(awselasticloadbalancingv2.HttpCodeElb_ELB_5XX_COUNT, sum), 0)
		alarmOver("Tier2UnhealthyTargets", "A Tier 2 task failed the load balancer's /livez check for 2 minutes",
			t2.Service.TargetGroup().Metrics().UnhealthyHostCount(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Maximum")}), 0, 2)
		running := awscloudwatch.NewAlarm(stack, jsii.String("Tier2RunningTasks"), &awscloudwatch.AlarmProps{
			AlarmDescription: jsii.String("Fewer Tier 2 tasks run than the service's minimum for 3 minutes (or none report at all)"),
			Metric: awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
				Namespace: jsii.String("ECS/ContainerInsights"), MetricName: jsii.String("RunningTaskCount"),
				DimensionsMap: &map[string]*string{"ClusterName": t2.Service.Cluster().ClusterName(), "ServiceName": t2.Service.Service().ServiceName()},
				Period:        minute, Statistic: jsii.String("Minimum"),
			}),
			Threshold:          jsii.Number(Tier2MinTasks),
			EvaluationPeriods:  jsii.Number(3),
			ComparisonOperator: awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_BREACHING,
		})
		running.AddAlarmAction(notify)
		s.Alarms["Tier2RunningTasks"] = running
		// Every node of every shard: after a failover the primary is
		// whichever node took over, so each shard's alarm reads the highest
		// of its nodes.
		for shard := 1; shard <= t2.Shards; shard++ {
			for _, m := range []struct{ id, metric, what string }{
				{"CacheMemory", "DatabaseMemoryUsagePercentage", "memory"},
				{"CacheCpu", "EngineCPUUtilization", "engine CPU"},
			} {
				nodes := map[string]awscloudwatch.IMetric{}
				var names []string
				for node := 1; node <= t2.NodesPerShard; node++ {
					n := fmt.Sprintf("n%d", node)
					names = append(names, n)
					nodes[n] = cacheNode(t2, shard, node, m.metric)
				}
				alarm(fmt.Sprintf("%sShard%d", m.id, shard), fmt.Sprintf("ElastiCache %s above 80%% on a node of shard %d", m.what, shard),
					awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
						Expression: jsii.String("MAX([" + strings.Join(names, ", ") + "])"), Label: jsii.String(fmt.Sprintf("shard %d, highest node", shard)),
						Period: awscdk.Duration_Minutes(jsii.Number(5)), UsingMetrics: &nodes,
					}), 80)
			}
		}
	}

	s.Dashboard = saleDashboard(stack, props, minute, s.Alarms)
	awscdk.NewCfnOutput(stack, jsii.String("AlarmTopicArn"), &awscdk.CfnOutputProps{
		Value: s.Topic.TopicArn(), Description: jsii.String("Subscribe the on-call address here"),
	})
	return s
}

// saleDashboard is what an operator watches during a sale: every alarm's
// state, each event's series (SEARCH, so events need no redeploy), the
// front door in us-east-1, the API, and Tier 2 down to each cache node.
func saleDashboard(stack awscdk.Stack, props *OpsStackProps, minute awscdk.Duration, alarmsByID map[string]awscloudwatch.Alarm) awscloudwatch.Dashboard {
	t1 := props.Tier1
	d := awscloudwatch.NewDashboard(stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{DefaultInterval: awscdk.Duration_Hours(jsii.Number(3))})
	graph := func(title string, width float64, left ...awscloudwatch.IMetric) awscloudwatch.GraphWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: jsii.String(title), Width: jsii.Number(width), Left: &left})
	}
	var alarms []awscloudwatch.IAlarm
	for _, id := range sortedKeys(alarmsByID) {
		alarms = append(alarms, alarmsByID[id])
	}
	d.AddWidgets(awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
		Title: jsii.String("Alarms"), Alarms: &alarms, Width: jsii.Number(24), Height: jsii.Number(6),
	}))
	d.AddWidgets(
		graph("Assignments per minute, by event", 8, tier1PerEvent(tier1api.MetricAssignments, "Sum", "")),
		graph("Let through per minute (serving-counter raises), by event", 8, tier1PerEvent(tier1api.MetricReleased, "Sum", "")),
		graph("Serving counter, by event", 8, tier1PerEvent(tier1api.MetricServingCounter, "Maximum", "")),
	)
	d.AddWidgets(
		graph("Passes issued (check), by event", 8, tier1PerEvent(tier1api.MetricAdmissions, "Sum", "")),
		graph("Store throttles, by event", 8, tier1PerEvent(tier1api.MetricThrottles, "Sum", "")),
		graph("Advancer: events with a line, and let through (all events)", 8,
			tier1All(tier1api.MetricEventsWaiting, "Maximum"), tier1All(tier1api.MetricReleased, "Sum")),
	)
	d.AddWidgets(
		graph("Tier 1 API: 5xx and 429 per minute", 8,
			t1.API.MetricServerError(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Sum")}), t1.API429),
		graph("p99 latency", 8,
			t1.API.MetricLatency(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("p99")}),
			t1.Functions["AssignFunction"].MetricDuration(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("p99")})),
		graph("Admitted notices: oldest age (s), DLQ depth", 8,
			t1.AdmittedQueue.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Maximum")}),
			t1.AdmittedDLQ.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Maximum")})),
	)
	if fd := props.FrontDoor; fd != nil {
		edge := &awscloudwatch.MetricOptions{Period: minute, Region: jsii.String(FrontDoorRegion)}
		d.AddWidgets(
			graph("Front door: requests per minute (us-east-1)", 12, fd.Distribution.MetricRequests(&awscloudwatch.MetricOptions{Period: minute, Region: jsii.String(FrontDoorRegion), Statistic: jsii.String("Sum")})),
			graph("Front door: 4xx and 5xx rate % (us-east-1)", 12, fd.Distribution.Metric4xxErrorRate(edge), fd.Distribution.Metric5xxErrorRate(edge)),
		)
	}
	if t2 := props.Tier2; t2 != nil {
		lb := t2.Service.LoadBalancer()
		sum := &awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Sum")}
		// Every node of every shard, by name (the ids are the replication
		// group's, which CloudFormation picks).
		cache := func(metric string) []awscloudwatch.IMetric {
			var out []awscloudwatch.IMetric
			for shard := 1; shard <= t2.Shards; shard++ {
				for node := 1; node <= t2.NodesPerShard; node++ {
					out = append(out, cacheNode(t2, shard, node, metric).With(&awscloudwatch.MetricOptions{
						Label: jsii.String(fmt.Sprintf("shard %d node %d", shard, node)),
					}))
				}
			}
			return out
		}
		d.AddWidgets(
			graph("Tier 2: requests and 5xx per minute", 8, lb.Metrics().RequestCount(sum),
				lb.Metrics().HttpCodeTarget(awselasticloadbalancingv2.HttpCodeTarget_TARGET_5XX_COUNT, sum)),
			graph("Tier 2: healthy and unhealthy tasks", 8,
				t2.Service.TargetGroup().Metrics().HealthyHostCount(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Minimum")}),
				t2.Service.TargetGroup().Metrics().UnhealthyHostCount(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Maximum")})),
			graph("Tier 2: CPU %", 8, t2.Service.Service().MetricCpuUtilization(&awscloudwatch.MetricOptions{Period: minute})),
		)
		d.AddWidgets(
			graph("ElastiCache memory %, every node", 12, cache("DatabaseMemoryUsagePercentage")...),
			graph("ElastiCache engine CPU %, every node", 12, cache("EngineCPUUtilization")...),
		)
	}
	return d
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
