/**
 * The chart's `helm test` hook (helm/psync/templates/tests/, README "helm test"):
 * rendered with the default and the production values, it is a Pod from the
 * release's image running files/helm-test.mjs with plain node, hardened like every
 * pod, given the operator token (and no other pod is), the services' URLs as the
 * gateway gets them, the internal CA (and under mutual TLS a client certificate), and
 * let through the NetworkPolicies; `tests.enabled=false` renders none of it. Then the
 * script itself runs against a real all-in-one system, as the Pod runs it.
 *
 * The alert template's `runbookBaseUrl` is required with the PrometheusRule: checked here too.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigMap, Pod } from 'kubernetes-models/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { CHART_DIR, helmAsync, K8sObject, lintArgs, renderChart, templateArgs, type HelmResult, type RenderOptions } from '../support/helm';
import { ROOT } from '../support/process';
import { runCommand, startSystem, stopAllSystems, type RunningSystem } from '../support/system';

type Any = any;
const SERVICES = ['identity', 'catalog', 'calendar', 'notifications'] as const;
const DEV = ['nats.allowAnonymous=true'];

const VARIANTS: { label: string; render: RenderOptions & { namespace: string }; fullname: string; production: boolean }[] = [
  { label: 'default values', render: { release: 'psync', namespace: 'psync', set: DEV }, fullname: 'psync', production: false },
  {
    label: 'production values',
    render: { release: 'partner', namespace: 'partner-sync', valuesFiles: ['test/helm/values-production.yaml'] },
    fullname: 'partner-psync',
    production: true,
  },
];

const rendered = new Map<string, K8sObject[]>();
let disabled: K8sObject[];
let lint: HelmResult;
let noRunbook: HelmResult;
let badRunbook: HelmResult;

beforeAll(async () => {
  await Promise.all([
    ...VARIANTS.map(async (v) => rendered.set(v.label, await renderChart(v.render))),
    (async () => (disabled = await renderChart({ set: [...DEV, 'tests.enabled=false'] })))(),
    (async () => (lint = await helmAsync(lintArgs({ set: DEV }))))(),
    (async () => (noRunbook = await helmAsync(templateArgs({ set: [...DEV, 'metrics.prometheusRule.enabled=true'] }))))(),
    (async () =>
      (badRunbook = await helmAsync(templateArgs({ set: [...DEV, 'metrics.prometheusRule.enabled=true', 'metrics.prometheusRule.runbookBaseUrl=docs/operations.md'] }))))(),
  ]);
});

function one(objs: K8sObject[], kind: string, name: string): K8sObject {
  const found = objs.filter((o) => o.kind === kind && o.metadata.name === name);
  expect(found).toHaveLength(1);
  return found[0]!;
}

const testHooks = (objs: K8sObject[]) => objs.filter((o) => o.metadata.annotations?.['helm.sh/hook'] === 'test');
const envOf = (container: Any) => new Map<string, Any>(container.env.map((e: Any) => [e.name, e]));
const portsOf = (rule: Any): number[] => (rule.ports ?? []).map((p: Any) => p.port);
const TEST_SELECTOR = { key: 'app.kubernetes.io/component', operator: 'In', values: ['test'] };
const admitsTestPod = (rule: Any) => (rule.from ?? []).some((peer: Any) => JSON.stringify(peer.podSelector?.matchExpressions) === JSON.stringify([TEST_SELECTOR]));

describe.each(VARIANTS)('helm test hook with $label', (v) => {
  const objs = () => rendered.get(v.label)!;
  const name = (c: string) => `${v.fullname}-${c}`;

  test('a Pod, its script ConfigMap and its NetworkPolicy are test hooks, replaced by the next run and deleted on success; the Pod comes last', () => {
    const hooks = testHooks(objs());
    expect(hooks.map((h) => `${h.kind}/${h.metadata.name}`).sort()).toEqual([`ConfigMap/${name('test')}`, `NetworkPolicy/${name('test')}`, `Pod/${name('test')}`]);
    for (const h of hooks) {
      expect(h.metadata.annotations!['helm.sh/hook-delete-policy']).toBe('before-hook-creation,hook-succeeded');
      expect(h.metadata.labels!['app.kubernetes.io/component']).toBe('test');
    }
    const weight = (kind: string) => Number(one(hooks, kind, name('test')).metadata.annotations!['helm.sh/hook-weight']);
    expect(weight('ConfigMap')).toBeLessThan(weight('Pod'));
    expect(weight('NetworkPolicy')).toBeLessThan(weight('Pod'));
    new Pod(one(hooks, 'Pod', name('test'))).validate();
    new ConfigMap(one(hooks, 'ConfigMap', name('test'))).validate();
    new NetworkPolicy(one(hooks, 'NetworkPolicy', name('test'))).validate();
  });

  test("the Pod runs the chart's script with plain node from the release's image, hardened like every pod", () => {
    const o = objs();
    const pod = one(o, 'Pod', name('test'));
    const gateway = one(o, 'Deployment', name('gateway')).spec.template.spec;
    const [c] = pod.spec.containers;
    expect(pod.spec.containers).toHaveLength(1);
    expect(c.image).toBe(gateway.containers[0].image);
    expect(c.command).toEqual(['node', '/etc/psync/helm-test/helm-test.mjs']);
    expect(pod.spec.restartPolicy).toBe('Never');
    expect(pod.spec.activeDeadlineSeconds).toBeGreaterThan(0);
    expect(pod.spec.automountServiceAccountToken).toBe(false);
    expect(pod.spec.securityContext).toEqual(gateway.securityContext);
    expect(c.securityContext).toEqual(gateway.containers[0].securityContext);
    expect(c.securityContext).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(c.resources.requests).toMatchObject({ cpu: expect.anything(), memory: expect.anything() });
    expect(c.resources.limits.memory).toBeDefined();
    // The script is the chart's file, mounted read-only from the hook ConfigMap.
    const cm = one(o, 'ConfigMap', name('test'));
    expect(cm.data['helm-test.mjs']).toBe(readFileSync(join(CHART_DIR, 'files', 'helm-test.mjs'), 'utf8').trimEnd());
    expect(pod.spec.volumes.find((vol: Any) => vol.name === 'script').configMap.name).toBe(cm.metadata.name);
    expect(c.volumeMounts.find((m: Any) => m.name === 'script')).toEqual({ name: 'script', mountPath: '/etc/psync/helm-test', readOnly: true });
    // Writable: only the /tmp emptyDir.
    const writable = c.volumeMounts.filter((m: Any) => !m.readOnly).map((m: Any) => m.mountPath);
    expect(writable).toEqual(['/tmp']);
    expect(pod.spec.volumes.find((vol: Any) => vol.name === 'tmp').emptyDir).toBeDefined();
  });

  test('the Pod calls the gateway Service and the services at the URLs the gateway uses, as the operator; it is the only pod given the operator token', () => {
    const o = objs();
    const pod = one(o, 'Pod', name('test'));
    const env = envOf(pod.spec.containers[0]);
    const gatewayService = one(o, 'Service', name('gateway'));
    expect(env.get('GATEWAY_URL').value).toBe(`http://${name('gateway')}.${v.render.namespace}.svc:${gatewayService.spec.ports.find((p: Any) => p.name === 'http').port}`);
    const gatewayEnv = envOf(one(o, 'Deployment', name('gateway')).spec.template.spec.containers[0]);
    for (const s of SERVICES) expect(env.get(`${s.toUpperCase()}_URL`).value).toBe(gatewayEnv.get(`${s.toUpperCase()}_URL`).value);
    const operator = v.production ? { name: 'psync-operator', key: 'psync-token' } : { name: name('operator-token'), key: 'token' };
    expect(env.get('PSYNC_TOKEN').valueFrom.secretKeyRef).toEqual(operator);
    const podSpecs = [pod.spec, ...o.filter((x) => x.kind === 'Deployment' || x.kind === 'Job').map((x) => x.spec.template.spec)];
    expect(podSpecs.filter((spec) => JSON.stringify(spec).includes(`"${operator.name}"`))).toEqual([pod.spec]);
  });

  test('TLS: the Pod trusts the internal CA and holds no service key; under mutual TLS it presents the client-only gateway certificate', () => {
    const o = objs();
    const pod = one(o, 'Pod', name('test'));
    const env = envOf(pod.spec.containers[0]);
    const tls = pod.spec.volumes.find((vol: Any) => vol.name === 'internal-tls').secret;
    expect(env.get('INTERNAL_TLS_CA').value).toBe('/etc/psync/helm-test-tls/ca.crt');
    if (v.production) {
      // requireClientCert: the gateway's Secret, whose certificate has no server usage.
      expect(tls.secretName).toBe(`${name('gateway')}-internal-tls`);
      expect(tls.items.map((i: Any) => i.key).sort()).toEqual(['ca.crt', 'tls.crt', 'tls.key']);
      expect(one(o, 'Certificate', `${name('gateway')}-internal-tls`).spec.usages).not.toContain('server auth');
      expect(env.get('INTERNAL_TLS_CERT').value).toBe('/etc/psync/helm-test-tls/tls.crt');
    } else {
      expect(tls.secretName).toBe(`${name('identity')}-internal-tls`);
      expect(tls.items).toEqual([{ key: 'ca.crt', path: 'ca.crt' }]);
      expect(env.has('INTERNAL_TLS_KEY')).toBe(false);
    }
  });

  test("NetworkPolicies: the Pod's own lets it reach only DNS, the gateway's HTTP port and the services' internal port; each of those lets it in", () => {
    const o = objs();
    const np = one(o, 'NetworkPolicy', name('test'));
    expect(one(o, 'Pod', name('test')).metadata.labels).toMatchObject(np.spec.podSelector.matchLabels);
    expect(np.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(np.spec.ingress).toEqual([]);
    // DNS exactly as every component's policy allows it, then the gateway and the services.
    expect(np.spec.egress[0]).toEqual(one(o, 'NetworkPolicy', name('gateway')).spec.egress[0]);
    const rest = np.spec.egress.slice(1).map((r: Any) => ({ ports: portsOf(r), to: r.to.map((p: Any) => p.podSelector.matchExpressions[0].values) }));
    expect(rest).toEqual([
      { ports: [8080], to: [['gateway']] },
      { ports: [8081], to: [[...SERVICES]] },
    ]);
    for (const s of SERVICES) {
      const rules = one(o, 'NetworkPolicy', name(s)).spec.ingress.filter(admitsTestPod);
      expect({ s, ports: rules.map(portsOf) }).toEqual({ s, ports: [[8081]] });
    }
    const gatewayRules = one(o, 'NetworkPolicy', name('gateway')).spec.ingress;
    // Production restricts the gateway's sources (gatewayIngressFrom): the Pod gets a rule; otherwise every source may.
    if (v.production) expect(gatewayRules.filter(admitsTestPod).map(portsOf)).toEqual([[8080]]);
    else expect(gatewayRules.find((r: Any) => portsOf(r).includes(8080)).from).toBeUndefined();
  });
});

describe('helm test hook switched off, lint, and the runbook URL', () => {
  test('tests.enabled=false renders no test hook and no NetworkPolicy rule for it', () => {
    expect(testHooks(disabled)).toEqual([]);
    for (const np of disabled.filter((o) => o.kind === 'NetworkPolicy'))
      expect({ np: np.metadata.name, admits: np.spec.ingress.some(admitsTestPod) }).toEqual({ np: np.metadata.name, admits: false });
  });

  test('helm lint --strict passes with the test hook rendered', () => {
    expect({ status: lint.status, out: lint.stdout + lint.stderr }).toMatchObject({ status: 0 });
  });

  test('the PrometheusRule needs metrics.prometheusRule.runbookBaseUrl (a URL), and every alert links into it', () => {
    expect(noRunbook.status).not.toBe(0);
    expect(noRunbook.stderr).toContain('metrics.prometheusRule.runbookBaseUrl is required with metrics.prometheusRule.enabled');
    expect(badRunbook.status).not.toBe(0);
    expect(badRunbook.stderr).toContain('runbookBaseUrl');
    const rule = one(rendered.get('production values')!, 'PrometheusRule', 'partner-psync');
    for (const r of rule.spec.groups.flatMap((g: Any) => g.rules))
      expect(r.annotations.runbook_url.startsWith('https://git.example.com/partner-sync/blob/main/docs/operations.md#')).toBe(true);
  });
});

// The script, as the Pod runs it, against a real system: every component is served by
// the one all-in-one process (its internal URL hosts the four services).
describe('files/helm-test.mjs against a running system', () => {
  let system: RunningSystem;
  let operatorToken: string;

  beforeAll(async () => {
    system = await startSystem({ timeoutMs: 110_000, env: { OPERATOR_TOKEN: '' } });
    operatorToken = readFileSync(join(system.dataDir, 'keys', 'operator.token'), 'utf8').trim();
  }, 120_000);

  afterAll(() => stopAllSystems());

  const run = (env: Record<string, string>) =>
    runCommand(process.execPath, [join(CHART_DIR, 'files', 'helm-test.mjs')], {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      GATEWAY_URL: system.gatewayUrl,
      ...Object.fromEntries(SERVICES.map((s) => [`${s.toUpperCase()}_URL`, system.internalUrl])),
      PSYNC_CLI: join(ROOT, 'bin', 'psync'),
      PSYNC_TOKEN: operatorToken,
      PSYNC_TEST_NAME: 'helm test jest',
      ...env,
    });

  test('every check passes: readyz, each service SERVING, a key issued, exchanged, revoked and then refused', async () => {
    const r = await run({});
    expect({ code: r.code, stdout: r.stdout }).toMatchObject({ code: 0 });
    const lines = r.stdout.trim().split('\n');
    expect(lines.filter((l) => l.startsWith('ok: '))).toHaveLength(6);
    expect(lines.at(-1)).toBe('helm test: 6 checks passed');
    expect(r.stdout).toMatch(/ok: token exchange \(workspace [0-9a-f-]{36}, key \S+ issued, exchanged, revoked and refused\)/);
  }, 120_000);

  test('a refused operator token fails the run with one line naming the check, exit 1', async () => {
    const r = await run({ PSYNC_TOKEN: 'psop_not-the-operator-token-0123456789' });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^FAIL: token exchange: psync workspace create: /m);
    expect(r.stdout.trim().split('\n').at(-1)).toBe('helm test: 1 of 6 checks failed');
  }, 120_000);
});
