// The outbound guard (address ranges, guarded fetch) and the policy endpoint prober.
export { isLoopback, forbiddenRange, type RangeAllowance } from "./address-ranges.ts";
export { checkOutboundUrl, guardedLookup, outboundFetch, type OutboundPolicy, OUTBOUND_LIMITS } from "./outbound.ts";
export { HttpEndpointProber } from "./endpoint-prober.ts";
