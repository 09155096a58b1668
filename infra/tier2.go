package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapplicationautoscaling"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecspatterns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticache"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticloadbalancingv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Tier2StackProps configures Tier 2. It sits in Tier 1's region.
type Tier2StackProps struct {
	awscdk.StackProps
	// Tier1KeysARN is the pass-key secret; injected so the queue verifies passes.
	Tier1KeysARN *string
	// AdmittedQueue receives one message per admission.
	AdmittedQueue awssqs.IQueue
	// EventsTable and PositionsTable are Tier 1's tables: the events table
	// holds each event's durable Tier 2 settings (docs/tier2-store.md), which
	// bin/queue reads (configured events only).
	EventsTable, PositionsTable awsdynamodb.ITable
	// OriginPrefixList, when set, is the only source the load balancer
	// admits (CloudFront's origin-facing prefix list).
	OriginPrefixList string
}

// Tier2Stack is the per-event queue: bin/queue on Fargate behind an ALB,
// on ElastiCache (Valkey, cluster mode, TLS, auth token) in a 2-AZ VPC.
type Tier2Stack struct {
	awscdk.Stack
	Vpc        awsec2.Vpc
	Cache      awselasticache.CfnReplicationGroup
	CacheAuth  awssecretsmanager.Secret
	Service    awsecspatterns.ApplicationLoadBalancedFargateService
	ImageParam awscdk.CfnParameter
	// Shards is the cache's node groups, for the Ops alarms.
	Shards int
}

// QueuePort is bin/queue's listen port in the container.
const QueuePort = 8080

// NewTier2Stack builds the stack. Synthesis needs no Docker: the image is a
// parameter (build services/queue/Dockerfile and push it; README, Deploy).
func NewTier2Stack(scope constructs.Construct, id string, props *Tier2StackProps) *Tier2Stack {
	sp := props.StackProps
	sp.Description = jsii.String("vwr Tier 2: queue service on Fargate, ElastiCache (Valkey, cluster mode, TLS), VPC")
	stack := awscdk.NewStack(scope, &id, &sp)
	s := &Tier2Stack{Stack: stack, Shards: 2}

	s.ImageParam = awscdk.NewCfnParameter(stack, jsii.String("QueueImageUri"), &awscdk.CfnParameterProps{
		Type:           jsii.String("String"),
		AllowedPattern: jsii.String(".+"),
		Description:    jsii.String("Image of services/queue/Dockerfile, e.g. 123456789012.dkr.ecr.eu-west-1.amazonaws.com/vwr-queue:v1"),
	})
	nodeType := awscdk.NewCfnParameter(stack, jsii.String("CacheNodeType"), &awscdk.CfnParameterProps{
		Type: jsii.String("String"), Default: "cache.r7g.large",
		Description: jsii.String("ElastiCache node type of each shard's primary and replica"),
	})

	s.Vpc = awsec2.NewVpc(stack, jsii.String("Vpc"), &awsec2.VpcProps{MaxAzs: jsii.Number(2), NatGateways: jsii.Number(1)})

	// Valkey in cluster mode, TLS in transit, encrypted at rest, AUTH token
	// from Secrets Manager (resolved by CloudFormation, never in the template).
	s.CacheAuth = awssecretsmanager.NewSecret(stack, jsii.String("CacheAuthToken"), &awssecretsmanager.SecretProps{
		Description: jsii.String("vwr Tier 2 ElastiCache AUTH token"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			SecretStringTemplate: jsii.String(`{}`),
			GenerateStringKey:    jsii.String("token"),
			PasswordLength:       jsii.Number(64),
			ExcludePunctuation:   jsii.Bool(true),
		},
	})
	cacheSG := awsec2.NewSecurityGroup(stack, jsii.String("CacheSG"), &awsec2.SecurityGroupProps{
		Vpc: s.Vpc, Description: jsii.String("vwr ElastiCache: only the queue service"), AllowAllOutbound: jsii.Bool(false),
	})
	var subnets []*string
	for _, sn := range *s.Vpc.PrivateSubnets() {
		subnets = append(subnets, sn.SubnetId())
	}
	subnetGroup := awselasticache.NewCfnSubnetGroup(stack, jsii.String("CacheSubnets"), &awselasticache.CfnSubnetGroupProps{
		Description: jsii.String("vwr Tier 2 cache subnets"),
		SubnetIds:   &subnets,
	})
	s.Cache = awselasticache.NewCfnReplicationGroup(stack, jsii.String("Cache"), &awselasticache.CfnReplicationGroupProps{
		ReplicationGroupDescription: jsii.String("vwr Tier 2 queue (Valkey, cluster mode)"),
		Engine:                      jsii.String("valkey"),
		EngineVersion:               jsii.String("8.0"),
		CacheNodeType:               nodeType.ValueAsString(),
		ClusterMode:                 jsii.String("enabled"),
		CacheParameterGroupName:     jsii.String("default.valkey8.cluster.on"),
		NumNodeGroups:               jsii.Number(float64(s.Shards)),
		ReplicasPerNodeGroup:        jsii.Number(1),
		AutomaticFailoverEnabled:    jsii.Bool(true),
		MultiAzEnabled:              jsii.Bool(true),
		TransitEncryptionEnabled:    jsii.Bool(true),
		AtRestEncryptionEnabled:     jsii.Bool(true),
		AuthToken:                   s.CacheAuth.SecretValueFromJson(jsii.String("token")).UnsafeUnwrap(),
		CacheSubnetGroupName:        subnetGroup.Ref(),
		SecurityGroupIds:            jsii.Strings(*cacheSG.SecurityGroupId()),
		Port:                        jsii.Number(6379),
	})
	// REDIS_URL holds the token, so it is a secret too, assembled by
	// CloudFormation from the token's dynamic reference and the endpoint.
	redisURL := awssecretsmanager.NewSecret(stack, jsii.String("RedisUrl"), &awssecretsmanager.SecretProps{
		Description: jsii.String("vwr Tier 2 REDIS_URL (rediss+cluster://:token@configuration-endpoint:port)"),
		SecretStringValue: awscdk.SecretValue_UnsafePlainText(awscdk.Fn_Join(jsii.String(""), &[]*string{
			jsii.String("rediss+cluster://:"),
			s.CacheAuth.SecretValueFromJson(jsii.String("token")).UnsafeUnwrap(),
			jsii.String("@"), s.Cache.AttrConfigurationEndPointAddress(),
			jsii.String(":"), s.Cache.AttrConfigurationEndPointPort(),
		})),
	})
	entrySecret := awssecretsmanager.NewSecret(stack, jsii.String("EntryTokenSecret"), &awssecretsmanager.SecretProps{
		Description:          jsii.String("vwr Tier 2 QUEUE_ENTRY_TOKEN_SECRET"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{PasswordLength: jsii.Number(48), ExcludePunctuation: jsii.Bool(true)},
	})
	tier1Keys := awssecretsmanager.Secret_FromSecretCompleteArn(stack, jsii.String("Tier1Keys"), props.Tier1KeysARN)

	cluster := awsecs.NewCluster(stack, jsii.String("Cluster"), &awsecs.ClusterProps{Vpc: s.Vpc, ContainerInsightsV2: awsecs.ContainerInsights_ENABLED})
	logs := awslogs.NewLogGroup(stack, jsii.String("QueueLogs"), &awslogs.LogGroupProps{
		Retention: awslogs.RetentionDays_TWO_WEEKS, RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	s.Service = awsecspatterns.NewApplicationLoadBalancedFargateService(stack, jsii.String("Queue"), &awsecspatterns.ApplicationLoadBalancedFargateServiceProps{
		Cluster:        cluster,
		Cpu:            jsii.Number(1024),
		MemoryLimitMiB: jsii.Number(2048),
		DesiredCount:   jsii.Number(2),
		// Deployments replace tasks without dropping below the desired count.
		MinHealthyPercent: jsii.Number(100),
		RuntimePlatform: &awsecs.RuntimePlatform{
			CpuArchitecture:       awsecs.CpuArchitecture_ARM64(),
			OperatingSystemFamily: awsecs.OperatingSystemFamily_LINUX(),
		},
		PublicLoadBalancer: jsii.Bool(true),
		OpenListener:       jsii.Bool(props.OriginPrefixList == ""),
		TaskImageOptions: &awsecspatterns.ApplicationLoadBalancedTaskImageOptions{
			Image:         awsecs.ContainerImage_FromRegistry(s.ImageParam.ValueAsString(), nil),
			ContainerPort: jsii.Number(QueuePort),
			LogDriver:     awsecs.LogDriver_AwsLogs(&awsecs.AwsLogDriverProps{StreamPrefix: jsii.String("queue"), LogGroup: logs}),
			Environment: &map[string]*string{
				"QUEUE_LISTEN_ADDR":         jsii.String(":8080"),
				"QUEUE_COOKIE_SECURE":       jsii.String("true"),
				"SQS_ENABLED":               jsii.String("true"),
				"SQS_QUEUE_URL":             props.AdmittedQueue.QueueUrl(),
				"VWR_TIER1_STORE":           jsii.String("dynamodb"),
				"VWR_TIER1_EVENTS_TABLE":    props.EventsTable.TableName(),
				"VWR_TIER1_POSITIONS_TABLE": props.PositionsTable.TableName(),
			},
			// Injected by ECS from Secrets Manager at task start: the task
			// definition holds only their ARNs.
			Secrets: &map[string]awsecs.Secret{
				"REDIS_URL":                awsecs.Secret_FromSecretsManager(redisURL, nil),
				"QUEUE_ENTRY_TOKEN_SECRET": awsecs.Secret_FromSecretsManager(entrySecret, nil),
				"VWR_TIER1_TOKEN_KEYS":     awsecs.Secret_FromSecretsManager(tier1Keys, nil),
			},
		},
	})
	if props.OriginPrefixList != "" {
		s.Service.LoadBalancer().Connections().AllowFrom(awsec2.Peer_PrefixList(jsii.String(props.OriginPrefixList)),
			awsec2.Port_Tcp(jsii.Number(80)), jsii.String("CloudFront origin-facing servers only"))
	}
	s.Service.TargetGroup().ConfigureHealthCheck(&awselasticloadbalancingv2.HealthCheck{
		Path: jsii.String("/healthz"), HealthyHttpCodes: jsii.String("200"),
	})
	queueSG := (*s.Service.Service().Connections().SecurityGroups())[0]
	cacheSG.AddIngressRule(queueSG, awsec2.Port_Tcp(jsii.Number(6379)), jsii.String("the queue service"), nil)
	scaling := s.Service.Service().AutoScaleTaskCount(&awsapplicationautoscaling.EnableScalingProps{MinCapacity: jsii.Number(2), MaxCapacity: jsii.Number(20)})
	scaling.ScaleOnCpuUtilization(jsii.String("Cpu"), &awsecs.CpuUtilizationScalingProps{TargetUtilizationPercent: jsii.Number(60)})
	props.AdmittedQueue.GrantSendMessages(s.Service.TaskDefinition().TaskRole())
	// The settings calls of internal/tier1/dynamostore (queuesettings.go): read
	// the version and the settings, write a threshold through the admin API.
	s.Service.TaskDefinition().TaskRole().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("dynamodb:GetItem", "dynamodb:Scan", "dynamodb:UpdateItem"),
		Resources: jsii.Strings(*props.EventsTable.TableArn()),
	}))

	awscdk.NewCfnOutput(stack, jsii.String("Tier2Url"), &awscdk.CfnOutputProps{
		Value:       awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("http://"), s.Service.LoadBalancer().LoadBalancerDnsName()}),
		Description: jsii.String("Tier 2 ALB (the front door routes /api/queue/* here)"),
	})
	return s
}
