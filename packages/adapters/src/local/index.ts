// Local stand-ins: DynamoDB Local, and the children a command starts.
export { freePort, startDynamoDbLocal, localCredentials, DYNAMODB_LOCAL_JVM_FLAGS } from "./dynamodb-local.ts";
export { ownChild } from "./children.ts";
