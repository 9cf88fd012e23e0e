/**
 * Initial policy weights for the embedded suite: the visible procedure of each family (list then
 * submit; read, edit, submit; query or mutate, then submit), none of the latent requirements.
 * Keys are `family|feature|action`, as the log-linear policy reads them.
 */
export function embeddedPolicyPrior(strength = 4): Record<string, number> {
  const s = strength;
  return {
    "app|bias|list_items": 0.6 * s,
    "app|ev:auth:ok|list_items": 0.4 * s,
    "app|ev:docs:read|list_items": 0.4 * s,
    "app|has:listed|submit": s,
    "app|has:listed|list_items": -s,
    "repair|bias|read_file": 0.4 * s,
    "repair|ev:search:hit|read_file": 0.4 * s,
    "repair|has:read|edit_file": 0.8 * s,
    "repair|has:read|read_file": -s,
    "repair|has:edited|submit": s,
    "repair|has:edited|edit_file": -0.8 * s,
    "db|bias|query": 0.5 * s,
    "db|ev:schema:shown|query": 0.3 * s,
    "db|tag:write|mutate": s,
    "db|tag:write|query": -s,
    "db|has:queried|submit": s,
    "db|has:queried|query": -s,
    "db|has:mutated|submit": s,
    "db|has:mutated|mutate": -s,
  };
}
