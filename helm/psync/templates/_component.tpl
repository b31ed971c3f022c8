{{/*
Per-component resources. Each templates/<component>/<resource>.yaml is one line:
  {{ include "psync.component.deployment" (dict "root" $ "component" "identity") }}
so every rendered file holds one resource, and the five components cannot drift.
The component's values live at .Values.<component>.
*/}}

{{/* Deployment of one component (role = the component name). */}}
{{- define "psync.component.deployment" -}}
{{- $root := .root -}}
{{- $name := .component -}}
{{- $c := index $root.Values $name -}}
{{- $isGateway := eq $name "gateway" -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "psync.componentName" . }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "psync.labels" . | nindent 4 }}
spec:
  {{- if not $c.autoscaling.enabled }}
  replicas: {{ $c.replicaCount }}
  {{- end }}
  revisionHistoryLimit: {{ $root.Values.revisionHistoryLimit }}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      # Never below the desired count during a rollout: a new pod must be ready
      # (readiness = migrations ran, database and bus answer) before an old one goes.
      maxUnavailable: 0
      maxSurge: {{ $root.Values.rollingUpdateMaxSurge }}
  selector:
    matchLabels:
      {{- include "psync.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "psync.podLabels" . | nindent 8 }}
        {{- with $root.Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        # Roll the pods when the non-secret configuration changes.
        checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
        # Roll the pods when this component's own token changes (a rotation's switch step).
        checksum/internal-token: {{ include "psync.tokenSha256" (dict "root" $root "role" $name) | sha256sum }}
        {{- with $root.Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        {{- with $c.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "psync.serviceAccountName" $root }}
      # The processes never talk to the Kubernetes API.
      automountServiceAccountToken: false
      # No {SERVICE}_PORT variables injected: configuration comes from the ConfigMap only.
      enableServiceLinks: false
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $root.Values.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      securityContext:
        {{- include "psync.podSecurityContext" $root | nindent 8 }}
      terminationGracePeriodSeconds: {{ $root.Values.terminationGracePeriodSeconds }}
      {{- with $c.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $c.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $c.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- if or $root.Values.spreadAcrossNodes $c.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- if $root.Values.spreadAcrossNodes }}
        - maxSkew: 1
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels:
              {{- include "psync.selectorLabels" . | nindent 14 }}
        {{- end }}
        {{- with $c.topologySpreadConstraints }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- end }}
      containers:
        - name: {{ $name }}
          image: {{ include "psync.image" $root | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          # The image's ENTRYPOINT is `node dist/main.js`; the argument is the role.
          args: [{{ $name | quote }}]
          ports:
            {{- if $isGateway }}
            - name: http
              containerPort: {{ $root.Values.ports.http }}
              protocol: TCP
            {{- else }}
            - name: grpc
              containerPort: {{ $root.Values.ports.internal }}
              protocol: TCP
            {{- if $root.Values.internalTls.enabled }}
            - name: health
              containerPort: {{ $root.Values.ports.health }}
              protocol: TCP
            {{- end }}
            {{- end }}
            - name: metrics
              containerPort: {{ $root.Values.ports.metrics }}
              protocol: TCP
          envFrom:
            - configMapRef:
                name: {{ include "psync.configMapName" $root }}
          env:
            {{- include "psync.podEnv" . | nindent 12 }}
            # This component's own internal credential, from its own Secret.
            - name: INTERNAL_TOKEN
              valueFrom:
                secretKeyRef:
                  name: {{ include "psync.tokenSecretName" (dict "root" $root "role" $name) }}
                  key: {{ include "psync.tokenSecretKey" (dict "root" $root "role" $name) }}
            {{- if not $isGateway }}
            # Hashes of the credentials allowed to call this service (not secret).
            - name: INTERNAL_CALLERS
              value: {{ include "psync.internalCallers" . | quote }}
            {{- end }}
            # The services this component calls (its own it calls in process).
            {{- range (include "psync.calleesOf" . | splitList " " | compact) }}
            - name: {{ upper . }}_URL
              value: {{ include "psync.internalUrl" (dict "root" $root "component" .) | quote }}
            {{- end }}
            {{- if not $isGateway }}
            {{- if $root.Values.database.perServiceRoles.enabled }}
            {{- $dbRef := include "psync.serviceDatabaseRef" . | fromYaml }}
            # Its own PostgreSQL role only, under both names (services/kit/runtime/config.ts).
            {{- include "psync.secretEnv" (dict "root" $root "env" "DATABASE_URL" "ref" $dbRef) | nindent 12 }}
            {{- include "psync.secretEnv" (dict "root" $root "env" (printf "%s_DATABASE_URL" (upper $name)) "ref" $dbRef) | nindent 12 }}
            {{- else }}
            {{- include "psync.secretEnv" (dict "root" $root "env" "DATABASE_URL" "ref" $root.Values.database) | nindent 12 }}
            {{- end }}
            {{- end }}
            {{- if has $name (include "psync.natsRoles" $root | splitList " ") }}
            {{- $nc := index $root.Values.nats.credentials $name }}
            # NATS (only the components that use it): the role's own URL, else the shared one.
            {{- if $nc.urlExistingSecret }}
            {{- include "psync.secretEnv" (dict "root" $root "env" "NATS_URL" "ref" (dict "existingSecret" $nc.urlExistingSecret "existingSecretKey" $nc.urlExistingSecretKey)) | nindent 12 }}
            {{- else if $root.Values.nats.existingSecret }}
            {{- include "psync.secretEnv" (dict "root" $root "env" "NATS_URL" "ref" $root.Values.nats) | nindent 12 }}
            {{- else }}
            - name: NATS_URL
              value: {{ $root.Values.nats.url | quote }}
            {{- end }}
            {{- if $nc.existingSecret }}
            # The role's own NATS credentials file (user JWT and NKey seed), mounted read-only.
            - name: NATS_CREDS
              value: {{ printf "%s/nats.creds" $root.Values.nats.credentialsMountPath | quote }}
            {{- end }}
            {{- with $root.Values.nats.stream }}
            # The stream's replication and retention, applied at start-up (README.md, "JetStream stream").
            - name: NATS_STREAM_REPLICAS
              value: {{ .replicas | int | toString | quote }}
            - name: NATS_STREAM_MAX_AGE
              value: {{ .maxAge | quote }}
            {{- if .maxBytes }}
            - name: NATS_STREAM_MAX_BYTES
              {{- /* A number from a values file is a float64 to Helm: print it whole. */}}
              value: {{ kindIs "string" .maxBytes | ternary .maxBytes (.maxBytes | int64 | toString) | quote }}
            {{- end }}
            {{- end }}
            {{- end }}
            {{- if eq $name "identity" }}
            {{- include "psync.secretEnv" (dict "root" $root "env" "TOKEN_SIGNING_KEY" "ref" $root.Values.identity.tokenSigningKey) | nindent 12 }}
            {{- include "psync.secretEnv" (dict "root" $root "env" "TOKEN_SIGNING_KEY_PREVIOUS" "ref" $root.Values.identity.tokenSigningKeyPrevious "optional" true) | nindent 12 }}
            {{- end }}
            {{- if eq $name "notifications" }}
            {{- include "psync.secretEnv" (dict "root" $root "env" "SECRETS_ENCRYPTION_KEY" "ref" $root.Values.notifications.secretsEncryptionKey) | nindent 12 }}
            {{- include "psync.secretEnv" (dict "root" $root "env" "SECRETS_ENCRYPTION_KEY_PREVIOUS" "ref" $root.Values.notifications.secretsEncryptionKeyPrevious "optional" true) | nindent 12 }}
            {{- end }}
            {{- with $root.Values.config.extraEnv }}
            {{- include "psync.extraEnv" . | trim | nindent 12 }}
            {{- end }}
            {{- with $c.extraEnv }}
            {{- include "psync.extraEnv" . | trim | nindent 12 }}
            {{- end }}
          {{- $p := $root.Values.probes }}
          startupProbe:
            {{- if $isGateway }}
            httpGet:
              path: /healthz
              port: http
            {{- else }}
            {{- include "psync.healthProbe" (dict "root" $root "service" (include "psync.grpcServiceName" $name)) | nindent 12 }}
            {{- end }}
            periodSeconds: {{ $p.startup.periodSeconds }}
            timeoutSeconds: {{ $p.startup.timeoutSeconds }}
            failureThreshold: {{ $p.startup.failureThreshold }}
          readinessProbe:
            {{- if $isGateway }}
            httpGet:
              path: /readyz
              port: http
            {{- else }}
            {{- include "psync.healthProbe" (dict "root" $root "service" (include "psync.grpcServiceName" $name)) | nindent 12 }}
            {{- end }}
            periodSeconds: {{ $p.readiness.periodSeconds }}
            timeoutSeconds: {{ $p.readiness.timeoutSeconds }}
            failureThreshold: {{ $p.readiness.failureThreshold }}
          livenessProbe:
            {{- if $isGateway }}
            httpGet:
              path: /healthz
              port: http
            {{- else }}
            # "liveness": SERVING while the process runs, whatever the database does.
            {{- include "psync.healthProbe" (dict "root" $root "service" "liveness") | nindent 12 }}
            {{- end }}
            periodSeconds: {{ $p.liveness.periodSeconds }}
            timeoutSeconds: {{ $p.liveness.timeoutSeconds }}
            failureThreshold: {{ $p.liveness.failureThreshold }}
          {{- if gt (int $root.Values.preStopSleepSeconds) 0 }}
          lifecycle:
            # Keep serving while the endpoint removal reaches every kube-proxy and
            # client; SIGTERM (drain, exit 0) follows.
            preStop:
              sleep:
                seconds: {{ $root.Values.preStopSleepSeconds }}
          {{- end }}
          resources:
            {{- toYaml $c.resources | nindent 12 }}
          securityContext:
            {{- include "psync.containerSecurityContext" $root | nindent 12 }}
          volumeMounts:
            {{- include "psync.volumeMounts" $root | nindent 12 }}
            {{- with include "psync.internalTlsVolumeMount" $root }}
            {{- . | nindent 12 }}
            {{- end }}
            {{- with include "psync.natsCredentialsVolumeMount" . }}
            {{- . | nindent 12 }}
            {{- end }}
      volumes:
        {{- include "psync.volumes" $root | nindent 8 }}
        {{- with include "psync.internalTlsVolume" . }}
        {{- . | nindent 8 }}
        {{- end }}
        {{- with include "psync.natsCredentialsVolume" . }}
        {{- . | nindent 8 }}
        {{- end }}
{{- end -}}

{{/* ClusterIP Service of one component: http (gateway) or grpc (services), plus metrics. */}}
{{- define "psync.component.service" -}}
{{- $root := .root -}}
{{- $c := index $root.Values .component -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "psync.componentName" . }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "psync.labels" . | nindent 4 }}
  {{- with $c.service.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  type: {{ $c.service.type }}
  selector:
    {{- include "psync.selectorLabels" . | nindent 4 }}
  ports:
    {{- if eq .component "gateway" }}
    - name: http
      port: {{ $c.service.port }}
      targetPort: http
      protocol: TCP
      appProtocol: http
    {{- else }}
    - name: grpc
      port: {{ $root.Values.ports.internal }}
      targetPort: grpc
      protocol: TCP
      {{- if $root.Values.internalTls.enabled }}
      # Connect/gRPC over HTTP/2 with TLS (a mesh passes it through as TLS).
      appProtocol: https
      {{- else }}
      # Connect/gRPC over cleartext HTTP/2.
      appProtocol: kubernetes.io/h2c
      {{- end }}
    {{- end }}
    - name: metrics
      port: {{ $root.Values.ports.metrics }}
      targetPort: metrics
      protocol: TCP
      appProtocol: http
{{- end -}}

{{/* HorizontalPodAutoscaler of one component, when <component>.autoscaling.enabled. */}}
{{- define "psync.component.hpa" -}}
{{- $root := .root -}}
{{- $a := (index $root.Values .component).autoscaling -}}
{{- if $a.enabled -}}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "psync.componentName" . }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "psync.labels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "psync.componentName" . }}
  minReplicas: {{ $a.minReplicas }}
  maxReplicas: {{ $a.maxReplicas }}
  metrics:
    {{- with $a.targetCPUUtilizationPercentage }}
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ . }}
    {{- end }}
    {{- with $a.targetMemoryUtilizationPercentage }}
    - type: Resource
      resource:
        name: memory
        target:
          type: Utilization
          averageUtilization: {{ . }}
    {{- end }}
  {{- with $a.behavior }}
  behavior:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
{{- end -}}

{{/* PodDisruptionBudget of one component, when <component>.podDisruptionBudget.enabled. */}}
{{- define "psync.component.pdb" -}}
{{- $root := .root -}}
{{- $pdb := (index $root.Values .component).podDisruptionBudget -}}
{{- if $pdb.enabled -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "psync.componentName" . }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "psync.labels" . | nindent 4 }}
spec:
  {{- if $pdb.minAvailable }}
  minAvailable: {{ $pdb.minAvailable }}
  {{- else }}
  maxUnavailable: {{ $pdb.maxUnavailable }}
  {{- end }}
  # A pod stuck in CrashLoopBackOff (not ready) may always be evicted, so a broken
  # rollout never blocks a node drain.
  unhealthyPodEvictionPolicy: AlwaysAllow
  selector:
    matchLabels:
      {{- include "psync.selectorLabels" . | nindent 6 }}
{{- end -}}
{{- end -}}

{{/*
NetworkPolicy of one component. Ingress: the gateway from anywhere (or the
configured peers) on its HTTP port; a service on the gRPC port only from the
release components that call it (psync.callees: identity ← gateway, catalog,
calendar, notifications; catalog ← gateway, calendar; calendar ← gateway,
notifications; notifications ← gateway), plus <component>.networkPolicy.extraIngressFrom
(marketplace clients, operators); metrics from networkPolicy.metricsFrom only (default:
the monitoring namespace). Egress: DNS; the gRPC port of exactly the services it calls
(none for identity); PostgreSQL (services only) and NATS (catalog, calendar,
notifications: psync.natsRoles), each only to its configured cidrs and peers; the OTLP
collector when tracing is on; the public internet on
networkPolicy.internet.ports for catalog (photos) and notifications (webhooks),
with private, link-local, loopback and the cluster's own ranges excepted.
*/}}
{{- define "psync.component.networkPolicy" -}}
{{- $root := .root -}}
{{- $name := .component -}}
{{- $np := $root.Values.networkPolicy -}}
{{- $c := index $root.Values $name -}}
{{- $isGateway := eq $name "gateway" -}}
{{- if $np.enabled -}}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "psync.componentName" . }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "psync.labels" . | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "psync.selectorLabels" . | nindent 6 }}
  policyTypes:
    - Ingress
    - Egress
  ingress:
    {{- if $isGateway }}
    # Public traffic: only the gateway accepts it.
    - ports:
        - protocol: TCP
          port: {{ $root.Values.ports.http }}
      {{- with $np.gatewayIngressFrom }}
      from:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    {{- if and $np.gatewayIngressFrom $root.Values.tests.enabled }}
    # The `helm test` Pod (templates/tests/): /readyz and a token exchange.
    - ports:
        - protocol: TCP
          port: {{ $root.Values.ports.http }}
      from:
        - podSelector:
            {{- include "psync.componentsSelector" (dict "root" $root "components" (list "test")) | nindent 12 }}
    {{- end }}
    {{- else }}
    {{- $callers := include "psync.callersOf" . | splitList " " | compact }}
    {{- if or $callers $c.networkPolicy.extraIngressFrom }}
    # Internal gRPC: the release components that call this service, and the extra peers.
    - ports:
        - protocol: TCP
          port: {{ $root.Values.ports.internal }}
      from:
        {{- with $callers }}
        - podSelector:
            {{- include "psync.componentsSelector" (dict "root" $root "components" .) | nindent 12 }}
        {{- end }}
        {{- with $c.networkPolicy.extraIngressFrom }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    {{- end }}
    {{- if $root.Values.tests.enabled }}
    # The `helm test` Pod (templates/tests/): grpc.health.v1, and on identity the
    # operator calls that issue and revoke its test key.
    - ports:
        - protocol: TCP
          port: {{ $root.Values.ports.internal }}
      from:
        - podSelector:
            {{- include "psync.componentsSelector" (dict "root" $root "components" (list "test")) | nindent 12 }}
    {{- end }}
    {{- end }}
    {{- with $np.metricsFrom }}
    # Prometheus scrapes (default: the monitoring namespace only; empty: nobody).
    - ports:
        - protocol: TCP
          port: {{ $root.Values.ports.metrics }}
      from:
        {{- toYaml . | nindent 8 }}
    {{- end }}
  egress:
    # DNS.
    - ports:
        - protocol: UDP
          port: 53
        - protocol: TCP
          port: 53
      {{- with $np.dns.to }}
      to:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    {{- with include "psync.calleesOf" . | splitList " " | compact }}
    # Internal gRPC to exactly the services this component calls.
    - ports:
        - protocol: TCP
          port: {{ $root.Values.ports.internal }}
      to:
        - podSelector:
            {{- include "psync.componentsSelector" (dict "root" $root "components" .) | nindent 12 }}
    {{- end }}
    {{- if not $isGateway }}
    # PostgreSQL: only networkPolicy.postgres's cidrs and peers (psync.validateTrust
    # refuses neither).
    {{- include "psync.egressRule" $np.postgres | nindent 4 }}
    {{- end }}
    {{- if has $name (include "psync.natsRoles" $root | splitList " ") }}
    # NATS JetStream, only from the components that use it (psync.natsRoles), only to
    # networkPolicy.nats's cidrs and peers.
    {{- include "psync.egressRule" $np.nats | nindent 4 }}
    {{- end }}
    {{- if $root.Values.telemetry.otlpEndpoint }}
    # OpenTelemetry collector (OTLP).
    {{- include "psync.egressRule" $np.otlp | nindent 4 }}
    {{- end }}
    {{- if or (eq $name "catalog") (eq $name "notifications") }}
    # The public internet: photo fetches (catalog) and webhook deliveries
    # (notifications). The application refuses non-public addresses itself too.
    {{- $v4except := concat $np.internet.ipv4Except (list) -}}
    {{- $v6except := concat $np.internet.ipv6.except (list) -}}
    {{- range $np.clusterCidrs }}
    {{- if contains ":" . }}
    {{- $v6except = append $v6except . }}
    {{- else }}
    {{- $v4except = append $v4except . }}
    {{- end }}
    {{- end }}
    - ports:
        {{- range $np.internet.ports }}
        - protocol: TCP
          port: {{ . }}
        {{- end }}
      to:
        - ipBlock:
            cidr: 0.0.0.0/0
            except:
              {{- range $v4except }}
              - {{ . }}
              {{- end }}
        {{- if $np.internet.ipv6.enabled }}
        - ipBlock:
            cidr: ::/0
            except:
              {{- range $v6except }}
              - {{ . | quote }}
              {{- end }}
        {{- end }}
    {{- end }}
{{- end -}}
{{- end -}}

{{/*
The cert-manager Certificate of one component (README.md, "Internal TLS"): only its
own names (psync.internalDnsNames) and usages (psync.internalTlsUsages), into a
Secret that only its own pods mount. Issued by internalTls.certManager.issuerRef, or
by the chart's own CA (internal-tls/ca-issuer.yaml); every Secret carries that CA as
ca.crt. Not rendered when the component has an existing Secret.
*/}}
{{- define "psync.component.internalTlsCertificate" -}}
{{- $root := .root -}}
{{- if include "psync.internalTlsCertManager" . -}}
{{- $cm := $root.Values.internalTls.certManager -}}
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: {{ include "psync.internalTlsSecretName" . }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "psync.labels" . | nindent 4 }}
spec:
  secretName: {{ include "psync.internalTlsSecretName" . }}
  secretTemplate:
    labels:
      {{- include "psync.labels" . | nindent 6 }}
  commonName: {{ include "psync.componentName" . | trunc 64 }}
  dnsNames:
    {{- include "psync.internalDnsNames" . | nindent 4 }}
  {{- if include "psync.internalTlsServes" . }}
  # The pod itself: bin/psync inside it (`kubectl exec`) calls https://127.0.0.1.
  ipAddresses:
    - 127.0.0.1
    - ::1
  {{- end }}
  duration: {{ $cm.duration }}
  renewBefore: {{ $cm.renewBefore }}
  privateKey:
    algorithm: {{ $cm.privateKey.algorithm }}
    size: {{ $cm.privateKey.size }}
    rotationPolicy: Always
  usages:
    {{- include "psync.internalTlsUsages" . | nindent 4 }}
  issuerRef:
    {{- if $cm.issuerRef }}
    {{- toYaml $cm.issuerRef | nindent 4 }}
    {{- else }}
    name: {{ include "psync.internalCaName" (dict "root" $root "suffix" "ca") }}
    kind: Issuer
    group: cert-manager.io
    {{- end }}
{{- end -}}
{{- end -}}
