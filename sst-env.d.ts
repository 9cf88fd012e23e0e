/* Kept by hand: `sst deploy`/`sst dev` would regenerate it. Types for Resource.X in handlers. */
import "sst";
declare module "sst" {
  export interface Resource {
    Pools: { name: string; type: "sst.aws.Dynamo" };
    Profiles: { name: string; type: "sst.aws.Dynamo" };
    Decisions: { name: string; type: "sst.aws.Dynamo" };
    ApiKeys: { name: string; type: "sst.aws.Dynamo" };
    Keys: { name: string; type: "sst.aws.Dynamo" };
    KeyEvents: { name: string; type: "sst.aws.Dynamo" };
    Usage: { name: string; type: "sst.aws.Dynamo" };
    UsageDays: { name: string; type: "sst.aws.Dynamo" };
    Processed: { name: string; type: "sst.aws.Dynamo" };
    Rollouts: { name: string; type: "sst.aws.Dynamo" };
    RescueJobs: { name: string; type: "sst.aws.Dynamo" };
    PolicyEndpoints: { name: string; type: "sst.aws.Dynamo" };
    Ballots: { name: string; type: "sst.aws.Dynamo" };
    Experiments: { name: string; type: "sst.aws.Dynamo" };
    ExperimentSteps: { name: string; type: "sst.aws.Dynamo" };
    GatewayEpisodes: { name: string; type: "sst.aws.Dynamo" };
    PoolEvolutions: { name: string; type: "sst.aws.Dynamo" };
    RunningPlaces: { name: string; type: "sst.aws.Dynamo" };
    Reports: { name: string; type: "sst.aws.Bucket" };
    ReportsRead: { name: string; type: "sst.sst.Linkable" };
    ProfileQueue: { url: string; type: "sst.aws.Queue" };
    VoteQueue: { url: string; type: "sst.aws.Queue" };
    DispatchQueue: { url: string; type: "sst.aws.Queue" };
    CoordinatorQueue: { url: string; type: "sst.aws.Queue" };
    PolicyEndpointUrl: { value: string; type: "sst.sst.Secret" };
    PolicyEndpointToken: { value: string; type: "sst.sst.Secret" };
    LlmApiKey: { value: string; type: "sst.sst.Secret" };
    GatewayConfig: { value: string; type: "sst.sst.Secret" };
    PriceList: { value: string; type: "sst.sst.Secret" };
    EndpointCidrs: { value: string; type: "sst.sst.Secret" };
    PoolProposer: { value: string; type: "sst.sst.Secret" };
    BootstrapAdminKeyHash: { value: string; type: "sst.sst.Secret" };
  }
}
export {};
