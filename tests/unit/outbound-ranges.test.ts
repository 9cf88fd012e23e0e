import { describe, expect, it } from "vitest";
import { forbiddenRange } from "@harness-s/adapters/net";

// Issue 67 item 11: no allowlist opens any cloud's host or metadata address, and every translated
// IPv6 form is read for the IPv4 address it carries, allowlisted or not. Pure: no address here is
// ever connected to.

const NAT64_LOCAL = ["64:ff9b:1::/48"];
const EVERYTHING = ["0.0.0.0/0", "::/0"];

describe("the outbound guard's ranges", () => {
  it.each([
    ["168.63.129.16", [], "Azure's host (WireServer), a public address"],
    ["168.63.129.16", EVERYTHING, "Azure's host, with everything allowed"],
    ["169.254.169.253", ["169.254.0.0/16"], "AWS's DNS beside the metadata address"],
    ["169.254.169.123", ["169.254.0.0/16"], "AWS's time service"],
    ["169.254.170.2", ["169.254.0.0/16"], "ECS credentials"],
    ["fd00:ec2::253", ["fd00::/8"], "AWS's IPv6 DNS"],
    ["fd00:ec2::123", EVERYTHING, "AWS's IPv6 time service"],
    ["64:ff9b:1::a9fe:a9fe", NAT64_LOCAL, "metadata behind a /96 local-use NAT64 prefix"],
    ["64:ff9b:1::7f00:1", NAT64_LOCAL, "loopback behind a /96 local-use NAT64 prefix"],
    ["64:ff9b:1::a00:7", NAT64_LOCAL, "a private address behind a /96 local-use NAT64 prefix"],
    ["64:ff9b:1:a9fe:a9:fe00::", NAT64_LOCAL, "metadata behind a /48 local-use NAT64 prefix"],
    ["64:ff9b:1:7f:0:100::", NAT64_LOCAL, "loopback behind a /56 local-use NAT64 prefix"],
    ["64:ff9b:1::a9:fea9:fe00:0", NAT64_LOCAL, "metadata behind a /64 local-use NAT64 prefix"],
    ["64:ff9b::a83f:8110", EVERYTHING, "Azure's host behind the well-known NAT64 prefix"],
    ["::ffff:168.63.129.16", EVERYTHING, "Azure's host, IPv4-mapped"],
  ])("%s is refused (%s: %s)", (address, allowCidrs) => {
    expect(forbiddenRange(address, { allowCidrs })).toBeDefined();
  });

  it.each([
    ["64:ff9b:1::808:808", NAT64_LOCAL],
    ["64:ff9b:1:808:8:800::", NAT64_LOCAL],
    ["93.184.216.34", []],
    ["10.1.2.3", ["10.0.0.0/8"]],
  ])("%s is let through where the allowlist opens it (a public address behind it)", (address, allowCidrs) => {
    expect(forbiddenRange(address, { allowCidrs })).toBeUndefined();
  });

  it("still refuses a local-use NAT64 address whatever it carries when no allowlist opens the prefix", () => {
    expect(forbiddenRange("64:ff9b:1::808:808")).toBe("local-use NAT64");
  });
});
