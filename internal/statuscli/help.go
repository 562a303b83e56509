package statuscli

// Help is the long help of `shardgate status`. It documents the output
// contract; a test checks that it names every JSON field of Row.
const Help = `List LeaseHosts and how each shard serves them: one row per entry in a
LeaseHost's status.shards[], or one row with SHARD "-" for a LeaseHost that no
shard serves (yet).

Columns:
  NAMESPACE, LEASEHOST  the LeaseHost (or ProviderHost)
  SHARD                 the shard's name (its Gateway's name)
  HOST                  the host that shard serves: the explicit hostname, or
                        subdomain.<shard domain>
  ADMITTED              the shard entry's Admitted condition: True, False,
                        Unknown, or "-" when there is none
  REASON                why: the LeaseHost's Reserved reason when Reserved is
                        False (Blocked, HostnameInUse, Withheld, ...), since
                        without the name nothing is served and that is what
                        the tenant must fix; otherwise the Admitted reason
  CERT                  the shard entry's CertificateReady condition
                        (automatic HTTPS): True, False, Unknown, or "-" when
                        the shard has no automatic HTTPS for the name; -o
                        wide has its reason in CERT-REASON. A ProviderHost
                        has no status: its rows show what its latest
                        Certify Event says (Issued or ShardCertificate:
                        True; Queued, Issuing, Backoff, ...: False), on
                        each of its shard rows alike
  -o wide adds, where kubectl puts them:
  SOURCE                LeaseHost, or ProviderHost for an Akash ProviderHost
                        (Akash mode; it has no status: a name it holds is
                        one whose generated route exists, and REASON is that
                        of its latest Reserve Event otherwise)
  OWNER, DSEQ           its lease (spec.lease.owner and dseq)
  CANONICAL             the shard's canonical hostname, the CNAME target
  ROUTE                 the generated HTTPRoute
  GATEWAY               the shard's Gateway, namespace/name
  RESERVED              the LeaseHost's Reserved condition status
  CERT-REASON           the CertificateReady reason: Issued,
                        ShardCertificate (the shard's own wildcard
                        certificate), Queued, Issuing, Backoff,
                        CertManagerNotInstalled, or cert-manager's own

Rows are sorted by namespace, LeaseHost and shard. A LeaseHost without shard
entries shows its requested hostname (if any), ADMITTED False when its
Reserved condition is False ("-" otherwise), and the Reserved reason, or the
Ready reason (NoShards, ...) when Ready is False and Reserved is not.

-o json and -o yaml print {"items": [...]} with these fields, always all
present ("" means none). Tools may rely on them; fields are only ever added:
  source                     "LeaseHost" or "ProviderHost"
  namespace, leaseHost       the LeaseHost (or ProviderHost)
  owner, dseq, gseq, oseq    its lease (numbers for the sequences)
  shard                      shard name ("" when the LeaseHost has no entries)
  gateway                    the shard's Gateway, "namespace/name"
  host                       the host that shard serves
  canonicalHostname          the shard's canonical hostname
  route                      the generated HTTPRoute's name
  reserved                   the Reserved condition status
  admitted                   the Admitted condition status: "True", "False",
                             "Unknown" or ""; only "True" is admitted
  reason, message            as REASON above, with the condition's message
  certificate                the CertificateReady condition status: "True",
                             "False", "Unknown" or "" (no automatic HTTPS)
  certificateReason, certificateMessage
                             that condition's reason and message

-o jsonpath=TEMPLATE applies a kubectl JSONPath template to that document
({.items[*].host}); -o custom-columns=NAME:PATH,... prints one column per
JSONPath, applied to each row's fields (HOST:.host,ADMITTED:.admitted). Both
use kubectl's own printers (k8s.io/cli-runtime). Empty tables print nothing
on stdout and say so on stderr, as kubectl does.

--owner and --shard must name something the listing has: an owner of a
listed LeaseHost, and a shard (or its Gateway, namespace/name) in a listed
LeaseHost's shard entries. Otherwise the command says so on stderr (with the
shards it saw) and exits 2, rather than print an empty table; when both are
known but no row has both, it prints nothing and says so on stderr.

--watch (-w) prints the listing, then the rows of every LeaseHost or
ProviderHost whose rows change, under the first header and in its columns,
until interrupted. The columns are as wide as the listing needs and at least
wide enough for typical cells, and stay so; a cell wider still pushes the
rest of its row right, and no other row. --owner and --shard are not checked
against the listing then: a watch may wait for them to appear.

Exit status:
  0  listed (with --fail-on-unadmitted: every listed row is admitted)
  1  --fail-on-unadmitted and at least one listed row is not admitted
     (ADMITTED is not True; a LeaseHost no shard serves is never admitted).
     A LeaseHost retired by a takeover (REASON TransferredAway: the old
     deployment of a blue-green cutover) does not count.
  2  could not answer: bad flags or arguments, an --owner or --shard no listed
     LeaseHost has, no usable kubeconfig, the apiserver unreachable or
     refusing the request (Forbidden, Unauthorized)

The kubeconfig is found as kubectl finds it: --kubeconfig, else $KUBECONFIG,
else ~/.kube/config, else the in-cluster service account. Without -n or -A the
context's namespace is listed. kubectl's connection flags work as in kubectl:
--context, --cluster, --user, --server (-s), --token, --as, --as-group,
--certificate-authority, --insecure-skip-tls-verify, --request-timeout
(default 30s) and the rest below.`

// Example is the example section of `shardgate status`.
const Example = `  # every LeaseHost of every namespace
  shardgate status -A

  # one tenant's hosts on one shard, for a script
  shardgate status -A --owner akash1... --shard shard-a -o json

  # CI gate: fail unless everything in the namespace is admitted
  shardgate status -n tenant-a --fail-on-unadmitted

  # the hosts one shard refuses, and follow changes
  shardgate status -A -o custom-columns=HOST:.host,SHARD:.shard,REASON:.reason --watch
  shardgate status -A -o jsonpath='{range .items[*]}{.host}{"\n"}{end}'`
