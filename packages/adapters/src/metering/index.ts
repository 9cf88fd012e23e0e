// What each request consumed of AWS: the consumption meter and the metered clients.
export { SQS_CHUNK_BYTES, ConsumptionMeter } from "./consumption.ts";
export {
  capacityUnits,
  transactionWriteUnits,
  instrumentDynamo,
  sqsRequests,
  instrumentSqs,
  meteredAwsClients,
} from "./aws-clients.ts";
