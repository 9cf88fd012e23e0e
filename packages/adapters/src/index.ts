// The adapters' own errors (their codes) and the translation of AWS's.
export {
  translateAwsError,
  aws,
  ADAPTERS_ERROR_CODES,
  type AdaptersErrorCode,
  WORKER_ERROR_CODES,
  PolicyWorkerRefusedError,
  PolicyEndpointError,
  PolicyReplyInvalidError,
  EnvironmentError,
  UrlNotAllowedError,
  EndpointProbeError,
  EndpointNotTokenExactError,
  ServedModelMismatchError,
} from "./errors.ts";
