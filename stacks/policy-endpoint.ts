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
 * The Lambdas get its URL and bearer token through `link`; the PolicyEndpointUrl secret, when set,
 * overrides the URL (an endpoint run elsewhere).
 */
import { GPU_ENDPOINT, endpointModel } from "./policy-endpoint-settings";

export function policyGpuEndpoint(token: sst.Secret) {
  const region = aws.getRegionOutput();
  const net = network(region);
  const { cluster, capacity } = gpuInstances(net.instanceGroup, net.subnets);
  const { task, repository } = workerTask(token, region);
  const { balancer, target } = balancedService(net, cluster, capacity, task);
  const endpoint = new sst.Linkable("PolicyGpuEndpoint", { properties: { url: $interpolate`http://${balancer.dnsName}` } });
  // What CloudWatch names the balancer's health check metrics by (stacks/observability.ts alarms on them).
  const health = { loadBalancer: balancer.arnSuffix, targetGroup: target.arnSuffix };
  return { endpoint, repository: repository.repositoryUrl, health };
}

type Region = ReturnType<typeof aws.getRegionOutput>;

function network(region: Region) {
  const tag = (name: string) => ({ Name: `harness-s-${name}` });
  // Network: a small VPC with two public subnets (the load balancer needs two zones).
  const vpc = new aws.ec2.Vpc("PolicyVpc", { cidrBlock: "10.42.0.0/16", enableDnsHostnames: true, tags: tag("policy") });
  const gateway = new aws.ec2.InternetGateway("PolicyGateway", { vpcId: vpc.id });
  const routes = new aws.ec2.RouteTable("PolicyRoutes", { vpcId: vpc.id, routes: [{ cidrBlock: "0.0.0.0/0", gatewayId: gateway.id }] });
  const subnets = ["a", "b"].map((zone, i) => {
    const subnet = new aws.ec2.Subnet(`PolicySubnet${zone.toUpperCase()}`, {
      vpcId: vpc.id,
      cidrBlock: `10.42.${i}.0/24`,
      availabilityZone: region.name.apply((r) => `${r}${zone}`),
      mapPublicIpOnLaunch: true,
    });
    new aws.ec2.RouteTableAssociation(`PolicyRoutes${zone.toUpperCase()}`, { subnetId: subnet.id, routeTableId: routes.id });
    return subnet;
  });

  // The balancer takes HTTP from anywhere (every request but /healthz carries the bearer token);
  // the instance takes the worker's port from the balancer only.
  const balancerGroup = new aws.ec2.SecurityGroup("PolicyBalancerGroup", {
    vpcId: vpc.id,
    ingress: [{ protocol: "tcp", fromPort: 80, toPort: 80, cidrBlocks: ["0.0.0.0/0"] }],
    egress: [{ protocol: "-1", fromPort: 0, toPort: 0, cidrBlocks: ["0.0.0.0/0"] }],
  });
  const instanceGroup = new aws.ec2.SecurityGroup("PolicyInstanceGroup", {
    vpcId: vpc.id,
    ingress: [{ protocol: "tcp", fromPort: GPU_ENDPOINT.port, toPort: GPU_ENDPOINT.port, securityGroups: [balancerGroup.id] }],
    egress: [{ protocol: "-1", fromPort: 0, toPort: 0, cidrBlocks: ["0.0.0.0/0"] }],
  });

  return { vpc, subnets, balancerGroup, instanceGroup };
}

function gpuInstances(instanceGroup: aws.ec2.SecurityGroup, subnets: aws.ec2.Subnet[]) {
  // The instance: ECS agent joined to the cluster, with the managed policy ECS container instances need.
  const cluster = new aws.ecs.Cluster("PolicyCluster");
  const instanceRole = new aws.iam.Role("PolicyInstanceRole", {
    assumeRolePolicy: JSON.stringify({ Version: "2012-10-17", Statement: [{ Effect: "Allow", Principal: { Service: "ec2.amazonaws.com" }, Action: "sts:AssumeRole" }] }),
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
    vpcZoneIdentifiers: subnets.map((s) => s.id),
    launchTemplate: { id: launch.id, version: "$Latest" },
    tags: [{ key: "AmazonECSManaged", value: "true", propagateAtLaunch: true }],
  });
  const capacity = new aws.ecs.CapacityProvider("PolicyCapacity", { autoScalingGroupProvider: { autoScalingGroupArn: group.arn, managedScaling: { status: "DISABLED" } } });
  new aws.ecs.ClusterCapacityProviders("PolicyClusterCapacity", {
    clusterName: cluster.name,
    capacityProviders: [capacity.name],
    defaultCapacityProviderStrategies: [{ capacityProvider: capacity.name, weight: 1 }],
  });

  return { cluster, capacity };
}

function workerTask(token: sst.Secret, region: Region) {
  // The task: the worker's image with one GPU; its token from Secrets Manager, never in the task definition.
  const repository = new aws.ecr.Repository("PolicyWorkerImage", { imageScanningConfiguration: { scanOnPush: true }, forceDelete: true });
  const tokenSecret = new aws.secretsmanager.Secret("PolicyWorkerToken");
  new aws.secretsmanager.SecretVersion("PolicyWorkerTokenValue", { secretId: tokenSecret.id, secretString: token.value });
  const executionRole = new aws.iam.Role("PolicyTaskExecutionRole", {
    assumeRolePolicy: JSON.stringify({ Version: "2012-10-17", Statement: [{ Effect: "Allow", Principal: { Service: "ecs-tasks.amazonaws.com" }, Action: "sts:AssumeRole" }] }),
    managedPolicyArns: ["arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy"],
    inlinePolicies: [
      {
        name: "read-worker-token",
        policy: tokenSecret.arn.apply((arn) =>
          JSON.stringify({ Version: "2012-10-17", Statement: [{ Effect: "Allow", Action: ["secretsmanager:GetSecretValue"], Resource: [arn] }] }),
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
        // The image's entrypoint binds 0.0.0.0:8700 and keeps checkpoints in /state (packages/policy-worker/Dockerfile).
        command: ["--model", "/models", "--served-model-name", endpointModel().name, "--device", "cuda"],
        secrets: [{ name: "HARNESS_S_WORKER_TOKEN", valueFrom: tokenSecret.arn }],
        mountPoints: [
          { sourceVolume: "models", containerPath: "/models", readOnly: true },
          { sourceVolume: "state", containerPath: "/state" },
        ],
        logConfiguration: { logDriver: "awslogs", options: { "awslogs-group": logs.name, "awslogs-region": region.name, "awslogs-stream-prefix": "worker" } },
      },
    ]),
  });

  return { task, repository };
}

function balancedService(net: ReturnType<typeof network>, cluster: aws.ecs.Cluster, capacity: aws.ecs.CapacityProvider, task: aws.ecs.TaskDefinition) {
  const { vpc, subnets, balancerGroup } = net;
  // The balancer: a long idle timeout (an update's long poll waits up to 30 s), health on /healthz.
  const balancer = new aws.lb.LoadBalancer("PolicyBalancer", {
    loadBalancerType: "application",
    securityGroups: [balancerGroup.id],
    subnets: subnets.map((s) => s.id),
    idleTimeout: 120,
  });
  const target = new aws.lb.TargetGroup("PolicyTargets", {
    vpcId: vpc.id,
    port: GPU_ENDPOINT.port,
    protocol: "HTTP",
    targetType: "instance",
    healthCheck: { path: GPU_ENDPOINT.healthPath, matcher: "200", interval: 30, healthyThreshold: 2, unhealthyThreshold: 5 },
  });
  new aws.lb.Listener("PolicyListener", { loadBalancerArn: balancer.arn, port: 80, protocol: "HTTP", defaultActions: [{ type: "forward", targetGroupArn: target.arn }] });
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
