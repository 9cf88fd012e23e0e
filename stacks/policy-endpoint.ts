/**
 * The managed GPU endpoint: the policy worker (packages/policy-worker, protocol v2) as an ECS
 * service on one GPU instance behind a load balancer, its image in an ECR repository of its own.
 *
 * One instance, one task, by design: the worker keeps open episodes (their KV caches) and the
 * LoRA adapters of the run's policies in memory, so two replicas behind one balancer would each
 * see half of an episode. Checkpoints and the model folder live on the instance's disk (/models
 * (SERVED_MODELS in infra/settings.ts) mounted read-only, /state for checkpoints), so a restarted
 * task continues from its checkpoints.
 *
 * **Private, never on the internet.** The worker carries the bearer token, callers' prompts,
 * trajectories and update batches, so its path never leaves the VPC: the balancer is internal, in
 * the VPC's private subnets, and takes HTTP only from the `PolicyClients` security group; the
 * functions that call it (dispatch, the coordinator) run in those private subnets with that group,
 * reaching the internet (callers' endpoints and environments, LLM voters) through the VPC's NAT
 * and DynamoDB through a gateway endpoint. Nothing in front of the worker listens on a public address.
 *
 * The Lambdas get its URL and bearer token through `link`; the PolicyEndpointUrl secret, when set,
 * overrides the URL (an endpoint run elsewhere).
 */
import { GPU_ENDPOINT, POLICY_NETWORK, endpointModel } from "./policy-endpoint-settings";

export function policyGpuEndpoint(token: sst.Secret) {
  const region = aws.getRegionOutput();
  const net = network(region);
  const { cluster, capacity } = gpuInstances(net.instanceGroup, net.vpc.privateSubnets);
  const { task, repository } = workerTask(token, region);
  const { balancer, target } = balancedService(net, cluster, capacity, task);
  const endpoint = new sst.Linkable("PolicyGpuEndpoint", {
    properties: { url: $interpolate`http://${balancer.dnsName}` },
  });
  // What CloudWatch names the balancer's health check metrics by (stacks/observability.ts alarms on them).
  const health = { loadBalancer: balancer.arnSuffix, targetGroup: target.arnSuffix };
  // Where a function that calls the endpoint runs: the private subnets, in the group the balancer takes.
  const clients = { privateSubnets: net.vpc.privateSubnets, securityGroups: [net.clientGroup.id] };
  return { endpoint, repository: repository.repositoryUrl, health, clients };
}

type Region = ReturnType<typeof aws.getRegionOutput>;

function network(region: Region) {
  // SST's VPC: a public and a private subnet in each of two zones (the balancer needs two), NAT for
  // the private subnets' way out (the instance pulls its image, the functions reach callers).
  const vpc = new sst.aws.Vpc("PolicyVpc", {
    az: region.name.apply((r) => POLICY_NETWORK.zones.map((z) => `${r}${z}`)),
    nat: POLICY_NETWORK.nat,
  });
  // DynamoDB from the private subnets without the NAT: a gateway endpoint (no charge) on their routes.
  new aws.ec2.VpcEndpoint("PolicyDynamoEndpoint", {
    vpcId: vpc.id,
    serviceName: $interpolate`com.amazonaws.${region.name}.dynamodb`,
    vpcEndpointType: "Gateway",
    routeTableIds: vpc.nodes.privateRouteTables.apply((tables) => tables.map((t) => t.id)),
  });
  const anywhere = [{ protocol: "-1", fromPort: 0, toPort: 0, cidrBlocks: ["0.0.0.0/0"] }];
  // The functions that call the endpoint: nothing comes in, anything goes out (through the NAT).
  const clientGroup = new aws.ec2.SecurityGroup("PolicyClients", { vpcId: vpc.id, egress: anywhere });
  // The balancer takes HTTP from those functions only; the instance takes the worker's port from the balancer only.
  const balancerGroup = new aws.ec2.SecurityGroup("PolicyBalancerGroup", {
    vpcId: vpc.id,
    ingress: [{ protocol: "tcp", fromPort: 80, toPort: 80, securityGroups: [clientGroup.id] }],
    egress: anywhere,
  });
  const instanceGroup = new aws.ec2.SecurityGroup("PolicyInstanceGroup", {
    vpcId: vpc.id,
    ingress: [
      { protocol: "tcp", fromPort: GPU_ENDPOINT.port, toPort: GPU_ENDPOINT.port, securityGroups: [balancerGroup.id] },
    ],
    egress: anywhere,
  });

  return { vpc, balancerGroup, instanceGroup, clientGroup };
}

function gpuInstances(instanceGroup: aws.ec2.SecurityGroup, subnets: sst.aws.Vpc["privateSubnets"]) {
  // The instance: ECS agent joined to the cluster, with the managed policy ECS container instances need.
  const cluster = new aws.ecs.Cluster("PolicyCluster");
  const instanceRole = new aws.iam.Role("PolicyInstanceRole", {
    assumeRolePolicy: JSON.stringify({
      Version: "2012-10-17",
      Statement: [{ Effect: "Allow", Principal: { Service: "ec2.amazonaws.com" }, Action: "sts:AssumeRole" }],
    }),
    managedPolicyArns: ["arn:aws:iam::aws:policy/service-role/AmazonEC2ContainerServiceforEC2Role"],
  });
  const profile = new aws.iam.InstanceProfile("PolicyInstanceProfile", { role: instanceRole.name });
  const ami = aws.ssm.getParameterOutput({ name: GPU_ENDPOINT.amiParameter });
  const launch = new aws.ec2.LaunchTemplate("PolicyLaunchTemplate", {
    imageId: ami.value,
    instanceType: GPU_ENDPOINT.instanceType,
    iamInstanceProfile: { arn: profile.arn },
    vpcSecurityGroupIds: [instanceGroup.id],
    blockDeviceMappings: [{ deviceName: "/dev/xvda", ebs: { volumeSize: 200, volumeType: "gp3" } }],
    userData: cluster.name.apply((name) =>
      Buffer.from(
        `#!/bin/bash\necho ECS_CLUSTER=${name} >> /etc/ecs/ecs.config\necho ECS_ENABLE_GPU_SUPPORT=true >> /etc/ecs/ecs.config\nmkdir -p ${endpointModel().folder} /opt/harness-s/state\n`,
      ).toString("base64"),
    ),
  });
  const group = new aws.autoscaling.Group("PolicyInstances", {
    minSize: 1,
    maxSize: 1,
    desiredCapacity: 1,
    vpcZoneIdentifiers: subnets,
    launchTemplate: { id: launch.id, version: "$Latest" },
    tags: [{ key: "AmazonECSManaged", value: "true", propagateAtLaunch: true }],
  });
  const capacity = new aws.ecs.CapacityProvider("PolicyCapacity", {
    autoScalingGroupProvider: { autoScalingGroupArn: group.arn, managedScaling: { status: "DISABLED" } },
  });
  new aws.ecs.ClusterCapacityProviders("PolicyClusterCapacity", {
    clusterName: cluster.name,
    capacityProviders: [capacity.name],
    defaultCapacityProviderStrategies: [{ capacityProvider: capacity.name, weight: 1 }],
  });

  return { cluster, capacity };
}

function workerTask(token: sst.Secret, region: Region) {
  // The task: the worker's image with one GPU; its token from Secrets Manager, never in the task definition.
  const repository = new aws.ecr.Repository("PolicyWorkerImage", {
    imageScanningConfiguration: { scanOnPush: true },
    forceDelete: true,
  });
  const tokenSecret = new aws.secretsmanager.Secret("PolicyWorkerToken");
  new aws.secretsmanager.SecretVersion("PolicyWorkerTokenValue", {
    secretId: tokenSecret.id,
    secretString: token.value,
  });
  const executionRole = new aws.iam.Role("PolicyTaskExecutionRole", {
    assumeRolePolicy: JSON.stringify({
      Version: "2012-10-17",
      Statement: [{ Effect: "Allow", Principal: { Service: "ecs-tasks.amazonaws.com" }, Action: "sts:AssumeRole" }],
    }),
    managedPolicyArns: ["arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy"],
    inlinePolicies: [
      {
        name: "read-worker-token",
        policy: tokenSecret.arn.apply((arn) =>
          JSON.stringify({
            Version: "2012-10-17",
            Statement: [{ Effect: "Allow", Action: ["secretsmanager:GetSecretValue"], Resource: [arn] }],
          }),
        ),
      },
    ],
  });
  const logs = new aws.cloudwatch.LogGroup("PolicyWorkerLogs", { retentionInDays: 14 });
  const task = new aws.ecs.TaskDefinition("PolicyWorkerTask", {
    family: "harness-s-policy-worker",
    requiresCompatibilities: ["EC2"],
    networkMode: "bridge",
    executionRoleArn: executionRole.arn,
    volumes: [
      { name: "models", hostPath: endpointModel().folder },
      { name: "state", hostPath: "/opt/harness-s/state" },
    ],
    containerDefinitions: $jsonStringify([
      {
        name: "policy-worker",
        image: $interpolate`${repository.repositoryUrl}:latest`,
        essential: true,
        memoryReservation: GPU_ENDPOINT.containerMemoryMiB,
        resourceRequirements: [{ type: "GPU", value: "1" }],
        portMappings: [{ containerPort: GPU_ENDPOINT.port, hostPort: GPU_ENDPOINT.port, protocol: "tcp" }],
        // The image's entrypoint binds 0.0.0.0:8700 and keeps checkpoints in /state
        // (packages/policy-worker/Dockerfile).
        command: ["--model", "/models", "--served-model-name", endpointModel().name, "--device", "cuda"],
        secrets: [{ name: "HARNESS_S_WORKER_TOKEN", valueFrom: tokenSecret.arn }],
        mountPoints: [
          { sourceVolume: "models", containerPath: "/models", readOnly: true },
          { sourceVolume: "state", containerPath: "/state" },
        ],
        logConfiguration: {
          logDriver: "awslogs",
          options: { "awslogs-group": logs.name, "awslogs-region": region.name, "awslogs-stream-prefix": "worker" },
        },
      },
    ]),
  });

  return { task, repository };
}

function balancedService(
  net: ReturnType<typeof network>,
  cluster: aws.ecs.Cluster,
  capacity: aws.ecs.CapacityProvider,
  task: aws.ecs.TaskDefinition,
) {
  const { vpc, balancerGroup } = net;
  // The balancer: internal (private subnets, no public address), a long idle timeout (an update's
  // long poll waits up to 30 s), health on /healthz.
  const balancer = new aws.lb.LoadBalancer("PolicyBalancer", {
    loadBalancerType: "application",
    internal: true,
    securityGroups: [balancerGroup.id],
    subnets: vpc.privateSubnets,
    idleTimeout: 120,
  });
  const target = new aws.lb.TargetGroup("PolicyTargets", {
    vpcId: vpc.id,
    port: GPU_ENDPOINT.port,
    protocol: "HTTP",
    targetType: "instance",
    healthCheck: {
      path: GPU_ENDPOINT.healthPath,
      matcher: "200",
      interval: 30,
      healthyThreshold: 2,
      unhealthyThreshold: 5,
    },
  });
  new aws.lb.Listener("PolicyListener", {
    loadBalancerArn: balancer.arn,
    port: 80,
    protocol: "HTTP",
    defaultActions: [{ type: "forward", targetGroupArn: target.arn }],
  });
  new aws.ecs.Service("PolicyWorkerService", {
    cluster: cluster.arn,
    taskDefinition: task.arn,
    desiredCount: 1,
    // One task at a time: the old one stops before the new one starts (they would share the GPU).
    deploymentMinimumHealthyPercent: 0,
    deploymentMaximumPercent: 100,
    capacityProviderStrategies: [{ capacityProvider: capacity.name, weight: 1 }],
    loadBalancers: [{ targetGroupArn: target.arn, containerName: "policy-worker", containerPort: GPU_ENDPOINT.port }],
    healthCheckGracePeriodSeconds: 600,
  });

  return { balancer, target };
}
