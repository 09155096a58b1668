package main

import (
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscertificatemanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfrontorigins"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3deployment"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// FrontDoorStackProps configures the front door. It must be deployed to
// us-east-1 (CloudFront-scope WAF, KeyValueStore).
type FrontDoorStackProps struct {
	awscdk.StackProps
	// APIEndpoint is the Tier 1 HTTP API's https://… endpoint.
	APIEndpoint *string
	// Tier2Domain is the Tier 2 ALB's DNS name; nil leaves /api/queue/* out.
	Tier2Domain *string
	// ProtectedOrigin is the protected site's domain (default behaviour).
	ProtectedOrigin string
	// StaticDir is static/vwr; EdgeDir holds the CloudFront Functions.
	StaticDir, EdgeDir string
	// OriginVerifyName is the secret (replicated to us-east-1) whose field
	// "value" CloudFront sends every origin as X-Vwr-Origin-Verify.
	OriginVerifyName string
	// DomainName and CertificateARN, when set, serve the front door on the
	// shop's own hostname.
	DomainName, CertificateARN string
}

// FrontDoorStack is CloudFront in front of everything: the waiting page from
// S3, the Tier 1 API under /vwr-api/*, Tier 2 under /api/queue/*, and the
// protected site behind the edge check.
type FrontDoorStack struct {
	awscdk.Stack
	Distribution awscloudfront.Distribution
	Bucket       awss3.Bucket
	EdgeKeys     awscloudfront.KeyValueStore
	EdgeCheck    awscloudfront.Function
	StripPrefix  awscloudfront.Function
	PageIndex    awscloudfront.Function
	StatusCache  awscloudfront.CachePolicy
	DrawCache    awscloudfront.CachePolicy
	// ChallengeCache keeps a nonce's proof-of-work challenge for the rest
	// of its window (docs/bots.md).
	ChallengeCache awscloudfront.CachePolicy
	WebACL         awswafv2.CfnWebACL
	// Topic receives the front door's alarms (CloudWatch alarms notify
	// topics in their own region, and CloudFront's metrics live here).
	Topic       awssns.Topic
	Edge5xxRate awscloudwatch.Alarm
}

// OriginVerifyHeader is the header CloudFront adds on its way to every
// origin (gate.OriginVerifyHeader, which the site's gate may require).
const OriginVerifyHeader = "X-Vwr-Origin-Verify"

// Edge5xxPercent is the share of 5xx answers at the edge, over five minutes,
// that raises the front door's alarm.
const Edge5xxPercent = 5

// Status cache TTLs: the status document says max-age=1, and CloudFront
// keeps it for 1 to 5 s, so a waiting poll costs no Lambda call.
const (
	StatusMinTTL = 1
	StatusMaxTTL = 5
)

// Draw cache TTLs: while the draw is pending the document says max-age=1;
// once drawn it is immutable (max-age of a year), and so is every chunk of
// the ticket list and every proof.
const (
	DrawMinTTL = 1
	DrawMaxTTL = 365 * 24 * 3600
)

// Challenge cache TTLs: a challenge asked for with ?nonce= is the same for
// the rest of its window, and says so in max-age (at most the window,
// VWR_TIER1_POW_WINDOW, 5 minutes by default); one asked for without a
// nonce says no-store, and MinTTL 0 lets CloudFront honour that.
const (
	ChallengeMinTTL = 0
	ChallengeMaxTTL = 300
)

// Behaviour path patterns.
const (
	PathPage      = "/vwr/*"
	PathAPI       = "/vwr-api/*"
	PathAPIStatus = "/vwr-api/vwr/status/*"
	PathAPIDraw   = "/vwr-api/vwr/draw/*"
	// PathAPIChallenge is the proof-of-work challenge, cached per nonce.
	PathAPIChallenge = "/vwr-api/vwr/challenge/*"
	PathTier2        = "/api/queue/*"
	// AssignPrefix is what the WAF rate rule counts, per client IP.
	AssignPrefix = "/vwr-api/vwr/assign/"
)

// pathOnlyCache is a cache policy keyed on the path alone (no cookies,
// headers or query strings), kept as long as the origin's Cache-Control
// says within minTTL…maxTTL seconds (minTTL when it says nothing).
func pathOnlyCache(stack awscdk.Stack, id, comment string, minTTL, maxTTL float64) awscloudfront.CachePolicy {
	return awscloudfront.NewCachePolicy(stack, jsii.String(id), &awscloudfront.CachePolicyProps{
		Comment:                    jsii.String(comment),
		MinTtl:                     awscdk.Duration_Seconds(jsii.Number(minTTL)),
		DefaultTtl:                 awscdk.Duration_Seconds(jsii.Number(minTTL)),
		MaxTtl:                     awscdk.Duration_Seconds(jsii.Number(maxTTL)),
		CookieBehavior:             awscloudfront.CacheCookieBehavior_None(),
		HeaderBehavior:             awscloudfront.CacheHeaderBehavior_None(),
		QueryStringBehavior:        awscloudfront.CacheQueryStringBehavior_None(),
		EnableAcceptEncodingGzip:   jsii.Bool(true),
		EnableAcceptEncodingBrotli: jsii.Bool(true),
	})
}

// NewFrontDoorStack builds the stack.
func NewFrontDoorStack(scope constructs.Construct, id string, props *FrontDoorStackProps) *FrontDoorStack {
	sp := props.StackProps
	sp.Description = jsii.String("vwr front door (us-east-1): CloudFront, S3 waiting page, edge check, WAF")
	stack := awscdk.NewStack(scope, &id, &sp)
	s := &FrontDoorStack{Stack: stack}

	rateLimit := awscdk.NewCfnParameter(stack, jsii.String("AssignRateLimit"), &awscdk.CfnParameterProps{
		Type: jsii.String("Number"), Default: 300, MinValue: jsii.Number(10),
		Description: jsii.String("Most assign requests one client IP may make per 5 minutes before WAF blocks it"),
	})

	// The waiting page: a private bucket read only by this distribution (OAC).
	s.Bucket = awss3.NewBucket(stack, jsii.String("PageBucket"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
	})
	pageOrigin := awscloudfrontorigins.S3BucketOrigin_WithOriginAccessControl(s.Bucket, nil)

	// The edge's copy of the Tier 1 keys, key = kid, value = secret. Filled
	// by the operator (docs/deploy.md, key rotation): never from the template.
	s.EdgeKeys = awscloudfront.NewKeyValueStore(stack, jsii.String("EdgeKeys"), &awscloudfront.KeyValueStoreProps{
		Comment: jsii.String("vwr Tier 1 pass keys for the edge check (kid -> secret)"),
	})
	s.EdgeCheck = awscloudfront.NewFunction(stack, jsii.String("EdgeCheck"), &awscloudfront.FunctionProps{
		Comment:       jsii.String("vwr edge check: Tier 1 pass or 302 to the waiting room"),
		Code:          awscloudfront.FunctionCode_FromFile(&awscloudfront.FileCodeOptions{FilePath: jsii.String(filepath.Join(props.EdgeDir, "edge-check.js"))}),
		Runtime:       awscloudfront.FunctionRuntime_JS_2_0(),
		KeyValueStore: s.EdgeKeys,
	})
	s.StripPrefix = awscloudfront.NewFunction(stack, jsii.String("StripApiPrefix"), &awscloudfront.FunctionProps{
		Comment: jsii.String("vwr: /vwr-api/vwr/... -> /vwr/... for the HTTP API"),
		Code:    awscloudfront.FunctionCode_FromFile(&awscloudfront.FileCodeOptions{FilePath: jsii.String(filepath.Join(props.EdgeDir, "strip-prefix.js"))}),
		Runtime: awscloudfront.FunctionRuntime_JS_2_0(),
	})
	s.PageIndex = awscloudfront.NewFunction(stack, jsii.String("PageIndex"), &awscloudfront.FunctionProps{
		Comment: jsii.String("vwr: /vwr/ -> /vwr/index.html in S3"),
		Code:    awscloudfront.FunctionCode_FromFile(&awscloudfront.FileCodeOptions{FilePath: jsii.String(filepath.Join(props.EdgeDir, "page-index.js"))}),
		Runtime: awscloudfront.FunctionRuntime_JS_2_0(),
	})
	viewer := func(f awscloudfront.Function) *[]*awscloudfront.FunctionAssociation {
		return &[]*awscloudfront.FunctionAssociation{{Function: f, EventType: awscloudfront.FunctionEventType_VIEWER_REQUEST}}
	}

	// WAF: a per-IP rate limit on assign, and AWS's common rule set.
	visibility := func(name string) *awswafv2.CfnWebACL_VisibilityConfigProperty {
		return &awswafv2.CfnWebACL_VisibilityConfigProperty{
			CloudWatchMetricsEnabled: jsii.Bool(true), MetricName: jsii.String(name), SampledRequestsEnabled: jsii.Bool(true),
		}
	}
	s.WebACL = awswafv2.NewCfnWebACL(stack, jsii.String("WebACL"), &awswafv2.CfnWebACLProps{
		Scope:            jsii.String("CLOUDFRONT"),
		DefaultAction:    &awswafv2.CfnWebACL_DefaultActionProperty{Allow: &awswafv2.CfnWebACL_AllowActionProperty{}},
		VisibilityConfig: visibility("vwr-front-door"),
		Rules: &[]interface{}{
			&awswafv2.CfnWebACL_RuleProperty{
				Name:     jsii.String("AssignRatePerIP"),
				Priority: jsii.Number(0),
				Action:   &awswafv2.CfnWebACL_RuleActionProperty{Block: &awswafv2.CfnWebACL_BlockActionProperty{}},
				Statement: &awswafv2.CfnWebACL_StatementProperty{
					RateBasedStatement: &awswafv2.CfnWebACL_RateBasedStatementProperty{
						Limit:            rateLimit.ValueAsNumber(),
						AggregateKeyType: jsii.String("IP"),
						ScopeDownStatement: &awswafv2.CfnWebACL_StatementProperty{
							ByteMatchStatement: &awswafv2.CfnWebACL_ByteMatchStatementProperty{
								FieldToMatch:         &awswafv2.CfnWebACL_FieldToMatchProperty{UriPath: map[string]interface{}{}},
								PositionalConstraint: jsii.String("STARTS_WITH"),
								SearchString:         jsii.String(AssignPrefix),
								TextTransformations: &[]interface{}{
									&awswafv2.CfnWebACL_TextTransformationProperty{Priority: jsii.Number(0), Type: jsii.String("NONE")},
								},
							},
						},
					},
				},
				VisibilityConfig: visibility("vwr-assign-rate"),
			},
			&awswafv2.CfnWebACL_RuleProperty{
				Name:           jsii.String("AWSManagedRulesCommonRuleSet"),
				Priority:       jsii.Number(1),
				OverrideAction: &awswafv2.CfnWebACL_OverrideActionProperty{None: map[string]interface{}{}},
				Statement: &awswafv2.CfnWebACL_StatementProperty{
					ManagedRuleGroupStatement: &awswafv2.CfnWebACL_ManagedRuleGroupStatementProperty{
						VendorName: jsii.String("AWS"), Name: jsii.String("AWSManagedRulesCommonRuleSet"),
					},
				},
				VisibilityConfig: visibility("vwr-common-rules"),
			},
		},
	})

	// The status document is the same for every visitor of an event: keyed
	// on the path alone, kept as long as the origin says (1 s), 1–5 s.
	s.StatusCache = pathOnlyCache(stack, "StatusCache", "vwr status: path-only key, TTL from Cache-Control within 1-5 s", StatusMinTTL, StatusMaxTTL)
	// The draw's documents are the same for everyone and, once drawn, never
	// change: keyed on the path alone, kept as long as the origin says.
	s.DrawCache = pathOnlyCache(stack, "DrawCache", "vwr draw: path-only key, TTL from Cache-Control (1 s while drawing, a year once drawn)", DrawMinTTL, DrawMaxTTL)
	// A challenge asked for with a nonce is the same for the rest of its
	// window: keyed on the path and the nonce, kept as long as it says.
	s.ChallengeCache = awscloudfront.NewCachePolicy(stack, jsii.String("ChallengeCache"), &awscloudfront.CachePolicyProps{
		Comment:                    jsii.String("vwr challenge: path and ?nonce= key, TTL from Cache-Control (the rest of the window; no-store without a nonce)"),
		MinTtl:                     awscdk.Duration_Seconds(jsii.Number(ChallengeMinTTL)),
		DefaultTtl:                 awscdk.Duration_Seconds(jsii.Number(ChallengeMinTTL)),
		MaxTtl:                     awscdk.Duration_Seconds(jsii.Number(ChallengeMaxTTL)),
		CookieBehavior:             awscloudfront.CacheCookieBehavior_None(),
		HeaderBehavior:             awscloudfront.CacheHeaderBehavior_None(),
		QueryStringBehavior:        awscloudfront.CacheQueryStringBehavior_AllowList(jsii.String("nonce")),
		EnableAcceptEncodingGzip:   jsii.Bool(true),
		EnableAcceptEncodingBrotli: jsii.Bool(true),
	})
	// assign and check: never cached; the pass cookie, Idempotency-Key,
	// Client-Nonce, the Altcha solution and the viewer's address (the
	// per-client bound's key, set by CloudFront itself) reach the API (not
	// Host: API Gateway routes on its own).
	apiForward := awscloudfront.NewOriginRequestPolicy(stack, jsii.String("ApiForward"), &awscloudfront.OriginRequestPolicyProps{
		Comment:             jsii.String("vwr API: cookies, query strings, Idempotency-Key, Client-Nonce, Altcha, viewer address"),
		CookieBehavior:      awscloudfront.OriginRequestCookieBehavior_All(),
		QueryStringBehavior: awscloudfront.OriginRequestQueryStringBehavior_All(),
		HeaderBehavior:      awscloudfront.OriginRequestHeaderBehavior_AllowList(jsii.String("Idempotency-Key"), jsii.String("Client-Nonce"), jsii.String("Altcha"), jsii.String("CloudFront-Viewer-Address")),
	})
	// Every origin gets the origin-verify header: a dynamic reference that
	// CloudFormation resolves from the secret's us-east-1 replica, so the
	// value is in no template.
	verify := &map[string]*string{OriginVerifyHeader: awscdk.SecretValue_SecretsManager(jsii.String(props.OriginVerifyName),
		&awscdk.SecretsManagerSecretOptions{JsonField: jsii.String("value")}).UnsafeUnwrap()}
	apiDomain := awscdk.Fn_Select(jsii.Number(2), awscdk.Fn_Split(jsii.String("/"), props.APIEndpoint, nil))
	apiOrigin := awscloudfrontorigins.NewHttpOrigin(apiDomain, &awscloudfrontorigins.HttpOriginProps{
		ProtocolPolicy: awscloudfront.OriginProtocolPolicy_HTTPS_ONLY,
		CustomHeaders:  verify,
	})
	siteOrigin := awscloudfrontorigins.NewHttpOrigin(jsii.String(props.ProtectedOrigin), &awscloudfrontorigins.HttpOriginProps{
		ProtocolPolicy: awscloudfront.OriginProtocolPolicy_HTTPS_ONLY,
		CustomHeaders:  verify,
	})

	dp := &awscloudfront.DistributionProps{
		Comment:     jsii.String("vwr front door"),
		WebAclId:    s.WebACL.AttrArn(),
		HttpVersion: awscloudfront.HttpVersion_HTTP2_AND_3,
		DefaultBehavior: &awscloudfront.BehaviorOptions{
			Origin:               siteOrigin,
			ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
			AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_ALL(),
			CachePolicy:          awscloudfront.CachePolicy_CACHING_DISABLED(),
			// The site sees the viewer's headers and cookies, and its own Host
			// (its certificate and virtual host are for ProtectedOrigin).
			OriginRequestPolicy:  awscloudfront.OriginRequestPolicy_ALL_VIEWER_EXCEPT_HOST_HEADER(),
			FunctionAssociations: viewer(s.EdgeCheck),
		},
	}
	if props.DomainName != "" {
		// The shop's own hostname: without it only d….cloudfront.net is
		// guarded, and visitors on the shop's name skip the edge.
		dp.DomainNames = jsii.Strings(props.DomainName)
		dp.Certificate = awscertificatemanager.Certificate_FromCertificateArn(stack, jsii.String("Certificate"), jsii.String(props.CertificateARN))
		dp.MinimumProtocolVersion = awscloudfront.SecurityPolicyProtocol_TLS_V1_2_2021
	}
	s.Distribution = awscloudfront.NewDistribution(stack, jsii.String("Distribution"), dp)
	// Behaviours are matched in the order added: the status, draw and
	// challenge paths before the rest of the API.
	s.Distribution.AddBehavior(jsii.String(PathAPIStatus), apiOrigin, &awscloudfront.AddBehaviorOptions{
		ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
		AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_GET_HEAD(),
		CachePolicy:          s.StatusCache,
		FunctionAssociations: viewer(s.StripPrefix),
	})
	s.Distribution.AddBehavior(jsii.String(PathAPIDraw), apiOrigin, &awscloudfront.AddBehaviorOptions{
		ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
		AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_GET_HEAD(),
		CachePolicy:          s.DrawCache,
		FunctionAssociations: viewer(s.StripPrefix),
	})
	s.Distribution.AddBehavior(jsii.String(PathAPIChallenge), apiOrigin, &awscloudfront.AddBehaviorOptions{
		ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
		AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_GET_HEAD(),
		CachePolicy:          s.ChallengeCache,
		FunctionAssociations: viewer(s.StripPrefix),
	})
	s.Distribution.AddBehavior(jsii.String(PathAPI), apiOrigin, &awscloudfront.AddBehaviorOptions{
		ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
		AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_ALL(),
		CachePolicy:          awscloudfront.CachePolicy_CACHING_DISABLED(),
		OriginRequestPolicy:  apiForward,
		FunctionAssociations: viewer(s.StripPrefix),
	})
	s.Distribution.AddBehavior(jsii.String(PathPage), pageOrigin, &awscloudfront.AddBehaviorOptions{
		ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
		CachePolicy:          awscloudfront.CachePolicy_CACHING_OPTIMIZED(),
		FunctionAssociations: viewer(s.PageIndex),
	})
	if props.Tier2Domain != nil {
		// Tier 2's ALB has no certificate of its own here; CloudFront talks
		// to it over HTTP inside AWS's network (a certificate
		// on the ALB would give end-to-end TLS).
		s.Distribution.AddBehavior(jsii.String(PathTier2), awscloudfrontorigins.NewHttpOrigin(props.Tier2Domain, &awscloudfrontorigins.HttpOriginProps{
			ProtocolPolicy: awscloudfront.OriginProtocolPolicy_HTTP_ONLY,
			CustomHeaders:  verify,
		}), &awscloudfront.AddBehaviorOptions{
			ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
			AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_ALL(),
			CachePolicy:          awscloudfront.CachePolicy_CACHING_DISABLED(),
			OriginRequestPolicy:  awscloudfront.OriginRequestPolicy_ALL_VIEWER(),
		})
	}

	awss3deployment.NewBucketDeployment(stack, jsii.String("Page"), &awss3deployment.BucketDeploymentProps{
		Sources:              &[]awss3deployment.ISource{awss3deployment.Source_Asset(jsii.String(props.StaticDir), nil)},
		DestinationBucket:    s.Bucket,
		DestinationKeyPrefix: jsii.String("vwr/"),
		// No invalidation: CDK would grant cloudfront:CreateInvalidation on
		// Resource *. A redeployed page reaches visitors within 5 minutes.
		CacheControl: &[]awss3deployment.CacheControl{awss3deployment.CacheControl_MaxAge(awscdk.Duration_Minutes(jsii.Number(5)))},
	})

	// The one grant that reads or writes the edge keys, for the deployer who
	// rotates them (docs/deploy.md, the edge trust boundary). The edge check itself
	// reads the store by association, without IAM.
	keyAdmin := awsiam.NewManagedPolicy(stack, jsii.String("EdgeKeysAdmin"), &awsiam.ManagedPolicyProps{
		Description: jsii.String("Read and rotate the vwr edge keys (whoever holds this can mint passes)"),
		Statements: &[]awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("cloudfront-keyvaluestore:DescribeKeyValueStore", "cloudfront-keyvaluestore:GetKey",
				"cloudfront-keyvaluestore:ListKeys", "cloudfront-keyvaluestore:PutKey", "cloudfront-keyvaluestore:DeleteKey"),
			Resources: jsii.Strings(*s.EdgeKeys.KeyValueStoreArn()),
		})},
	})
	awscdk.NewCfnOutput(stack, jsii.String("EdgeKeysAdminPolicyArn"), &awscdk.CfnOutputProps{
		Value: keyAdmin.ManagedPolicyArn(), Description: jsii.String("Attach to the deployer role only"),
	})
	awscdk.NewCfnOutput(stack, jsii.String("DistributionDomain"), &awscdk.CfnOutputProps{
		Value: s.Distribution.DistributionDomainName(), Description: jsii.String("The front door: https://<this>/vwr/?event=<id>"),
	})
	awscdk.NewCfnOutput(stack, jsii.String("EdgeKeysArn"), &awscdk.CfnOutputProps{
		Value: s.EdgeKeys.KeyValueStoreArn(), Description: jsii.String("KeyValueStore of the Tier 1 keys (kid -> secret); vwr admin edge-keys sync fills it"),
	})
	awscdk.NewCfnOutput(stack, jsii.String("DistributionId"), &awscdk.CfnOutputProps{Value: s.Distribution.DistributionId()})
	if props.DomainName != "" {
		awscdk.NewCfnOutput(stack, jsii.String("CustomDomain"), &awscdk.CfnOutputProps{
			Value:       jsii.String(props.DomainName),
			Description: jsii.String("Point this name at DistributionDomain (Route 53 alias, or a CNAME)"),
		})
	}

	// CloudFront's metrics live in us-east-1, and an alarm notifies only a
	// topic of its own region: the front door has its own topic.
	s.Topic = awssns.NewTopic(stack, jsii.String("EdgeAlarms"), &awssns.TopicProps{DisplayName: jsii.String("vwr front door alarms")})
	s.Edge5xxRate = awscloudwatch.NewAlarm(stack, jsii.String("Edge5xxRate"), &awscloudwatch.AlarmProps{
		AlarmDescription: jsii.String("More than 5% of the front door's answers were 5xx for 5 minutes (origin, Lambda, or edge function errors)"),
		Metric: s.Distribution.Metric5xxErrorRate(&awscloudwatch.MetricOptions{
			Period: awscdk.Duration_Minutes(jsii.Number(1)), Statistic: jsii.String("Average"),
		}),
		Threshold:          jsii.Number(Edge5xxPercent),
		EvaluationPeriods:  jsii.Number(5),
		DatapointsToAlarm:  jsii.Number(5),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	s.Edge5xxRate.AddAlarmAction(awscloudwatchactions.NewSnsAction(s.Topic))
	awscdk.NewCfnOutput(stack, jsii.String("EdgeAlarmTopicArn"), &awscdk.CfnOutputProps{
		Value: s.Topic.TopicArn(), Description: jsii.String("Subscribe the on-call address here too (the front door's alarms)"),
	})
	return s
}
