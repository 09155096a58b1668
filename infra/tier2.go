package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapplicationautoscaling"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecr"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecspatterns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticache"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticloadbalancingv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/customresources"
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
	// OriginPrefixList is the only source the load balancer admits
	// (CloudFront's origin-facing prefix list); empty looks it up at deploy
	// time.
	OriginPrefixList string
	// Repository holds the queue image (the registry stack's).
	Repository awsecr.IRepository
}

// Tier2Stack is the per-event queue: bin/queue on Fargate behind an ALB,
// on ElastiCache (Valkey, cluster mode, TLS, auth token) in a 2-AZ VPC.
type Tier2Stack struct {
	awscdk.Stack
	Vpc       awsec2.Vpc
	Cache     awselasticache.CfnReplicationGroup
	CacheAuth awssecretsmanager.Secret
	Service   awsecspatterns.ApplicationLoadBalancedFargateService
	ImageTag  awscdk.CfnParameter
	// PrefixListLookup finds CloudFront's origin-facing prefix list at
	// deploy time; nil when the id was given.
	PrefixListLookup customresources.AwsCustomResource
	// Shards is the cache's node groups and NodesPerShard the nodes of
	// each (a primary and its replicas), for the Ops alarms.
	Shards, NodesPerShard int
}

// QueuePort is bin/queue's listen port in the container.
const QueuePort = 8080

// Tier2MinTasks and Tier2MaxTasks bound the service's autoscaling.
const (
	Tier2MinTasks = 2
	Tier2MaxTasks = 20
)

// CloudFrontOriginFacing is the AWS-managed prefix list of CloudFront's
// origin-facing servers, the same name in every region.
const CloudFrontOriginFacing = "com.amazonaws.global.cloudfront.origin-facing"

// HealthCheckPath is what the load balancer asks each task: /livez answers
// without Redis, so an ElastiCache failover does not mark every task
// unhealthy at once (/healthz pings Redis, for people).
const HealthCheckPath = "/livez"

// NewTier2Stack builds the stack. Synthesis needs no Docker: the image is a
// tag in the registry stack's repository, a parameter (make deploy pushes
// services/queue/Dockerfile there and passes the tag; docs/deploy.md).
func NewTier2Stack(scope constructs.Construct, id string, props *Tier2StackProps) *Tier2Stack {
	sp := props.StackProps
	sp.Description = jsii.String("vwr Tier 2: queue service on Fargate, ElastiCache (Valkey, cluster mode, TLS), VPC")
	stack := awscdk.NewStack(scope, &id, &sp)
	s := &Tier2Stack{Stack: stack, Shards: 2, NodesPerShard: 2}

	s.ImageTag = awscdk.NewCfnParameter(stack, jsii.String("QueueImageTag"), &awscdk.CfnParameterProps{
		Type:           jsii.String("String"),
		AllowedPattern: jsii.String("[A-Za-z0-9_][A-Za-z0-9._-]{0,127}"),
		Description:    jsii.String("Tag of the services/queue/Dockerfile image in the registry stack's repository (make deploy pushes it and passes the tag)"),
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
		ReplicasPerNodeGroup:        jsii.Number(float64(s.NodesPerShard - 1)),
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
		DesiredCount:   jsii.Number(Tier2MinTasks),
		// Deployments replace tasks without dropping below the desired count.
		MinHealthyPercent: jsii.Number(100),
		// A deployment whose tasks never turn healthy (an image that does not
		// start, a missing secret) rolls back within minutes instead of
		// holding the stack in CREATE/UPDATE_IN_PROGRESS for hours.
		CircuitBreaker:         &awsecs.DeploymentCircuitBreaker{Enable: jsii.Bool(true), Rollback: jsii.Bool(true)},
		HealthCheckGracePeriod: awscdk.Duration_Seconds(jsii.Number(30)),
		RuntimePlatform: &awsecs.RuntimePlatform{
			CpuArchitecture:       awsecs.CpuArchitecture_ARM64(),
			OperatingSystemFamily: awsecs.OperatingSystemFamily_LINUX(),
		},
		PublicLoadBalancer: jsii.Bool(true),
		// Only CloudFront may reach it (the ingress rule below).
		OpenListener: jsii.Bool(false),
		TaskImageOptions: &awsecspatterns.ApplicationLoadBalancedTaskImageOptions{
			// Grants the task execution role pull rights on this repository.
			Image:         awsecs.ContainerImage_FromEcrRepository(props.Repository, s.ImageTag.ValueAsString()),
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
	prefixList := props.OriginPrefixList
	if prefixList == "" {
		// Looked up at deploy time: the id differs by region, and a lookup at
		// synthesis would need credentials and an account.
		call := &customresources.AwsSdkCall{
			Service: jsii.String("EC2"), Action: jsii.String("describeManagedPrefixLists"),
			Parameters:         map[string]any{"Filters": []map[string]any{{"Name": "prefix-list-name", "Values": []string{CloudFrontOriginFacing}}}},
			PhysicalResourceId: customresources.PhysicalResourceId_FromResponse(jsii.String("PrefixLists.0.PrefixListId")),
		}
		s.PrefixListLookup = customresources.NewAwsCustomResource(stack, jsii.String("CloudFrontPrefixList"), &customresources.AwsCustomResourceProps{
			OnCreate: call, OnUpdate: call,
			// DescribeManagedPrefixLists has no resource-level permissions.
			Policy:              customresources.AwsCustomResourcePolicy_FromSdkCalls(&customresources.SdkCallsPolicyOptions{Resources: customresources.AwsCustomResourcePolicy_ANY_RESOURCE()}),
			InstallLatestAwsSdk: jsii.Bool(false),
		})
		prefixList = *s.PrefixListLookup.GetResponseField(jsii.String("PrefixLists.0.PrefixListId"))
	}
	s.Service.LoadBalancer().Connections().AllowFrom(awsec2.Peer_PrefixList(jsii.String(prefixList)),
		awsec2.Port_Tcp(jsii.Number(80)), jsii.String("CloudFront origin-facing servers only"))
	s.Service.TargetGroup().ConfigureHealthCheck(&awselasticloadbalancingv2.HealthCheck{
		Path: jsii.String(HealthCheckPath), HealthyHttpCodes: jsii.String("200"),
	})
	queueSG := (*s.Service.Service().Connections().SecurityGroups())[0]
	cacheSG.AddIngressRule(queueSG, awsec2.Port_Tcp(jsii.Number(6379)), jsii.String("the queue service"), nil)
	scaling := s.Service.Service().AutoScaleTaskCount(&awsapplicationautoscaling.EnableScalingProps{MinCapacity: jsii.Number(Tier2MinTasks), MaxCapacity: jsii.Number(Tier2MaxTasks)})
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
