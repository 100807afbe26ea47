// Given an address / when the per-client limits ask which client it is / then its network.
import assert from "node:assert/strict";
import { clientNetwork, LOOPBACK_CLIENT, UNKNOWN_CLIENT } from "../src/http/client_network.ts";
import { parseConfig } from "../src/config.ts";

Deno.test("an IPv6 address counts as its /64, or the configured prefix", () => {
  assert.equal(clientNetwork("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64");
  assert.equal(clientNetwork("2001:DB8:1:2::ffff"), "2001:db8:1:2::/64", "canonical, lower case");
  assert.equal(clientNetwork("2001:db8:1:2:3:4:5:6", 48), "2001:db8:1::/48");
  assert.equal(clientNetwork("2001:db8:1:2:3:4:5:6", 128), "2001:db8:1:2:3:4:5:6/128");
  assert.equal(clientNetwork("[2001:db8:1:2::9]:443"), "2001:db8:1:2::/64", "brackets and a port");
  assert.equal(clientNetwork("fe80::1%eth0"), "fe80::/64", "the zone names an interface here, not a client");
  assert.ok(clientNetwork("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 128).length <= 43);
});

Deno.test("an IPv4 address is itself, an IPv4-mapped address its IPv4 address", () => {
  assert.equal(clientNetwork("203.0.113.7"), "203.0.113.7");
  assert.equal(clientNetwork("203.0.113.7:5000"), "203.0.113.7");
  assert.equal(clientNetwork("::ffff:203.0.113.7"), "203.0.113.7");
  assert.equal(clientNetwork("::ffff:cb00:7107"), "203.0.113.7");
});

Deno.test("every loopback address is one client", () => {
  for (const address of ["127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "::ffff:127.0.0.3", "[::1]"]) {
    assert.equal(clientNetwork(address), LOOPBACK_CLIENT, address);
  }
});

Deno.test("what is not an address is the one unknown client", () => {
  for (const text of ["", "unknown", "x".repeat(5000), "127.1", "01.2.3.4", "1.2.3.4.5", "2001:db8::g"]) {
    assert.equal(clientNetwork(text), UNKNOWN_CLIENT, text.slice(0, 20));
  }
});

Deno.test("TOKEN_IPV6_PREFIX and UNKNOWN_TOKEN_LOOKUPS_PER_MINUTE: defaults and bounds", () => {
  const config = parseConfig({});
  assert.ok(!("error" in config));
  assert.equal(config.tokenIpv6Prefix, 64);
  assert.equal(config.unknownTokenLookupsPerMinute, 60);
  const bad = parseConfig({ TOKEN_IPV6_PREFIX: "129", UNKNOWN_TOKEN_LOOKUPS_PER_MINUTE: "0" });
  assert.ok("error" in bad);
  assert.match(bad.error, /^Invalid TOKEN_IPV6_PREFIX: must be at most 128$/m);
  assert.match(bad.error, /^Invalid UNKNOWN_TOKEN_LOOKUPS_PER_MINUTE: must be at least 1$/m);
});
