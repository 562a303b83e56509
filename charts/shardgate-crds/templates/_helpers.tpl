{{- /*
shardgate-crds.crd renders one CRD file of the chart in which it is called
(root: that chart's context; path: the file): the file as it is, plus the
chart's labels and helm.sh/resource-policy: keep, so neither `helm
uninstall` nor turning an option off deletes a CRD (and with it every
object of its kind). Shared by this chart and its subcharts (named
templates are global to a chart and its subcharts).
*/ -}}
{{- define "shardgate-crds.crd" -}}
{{- $crd := .root.Files.Get .path | fromYaml }}
{{- if or (hasKey $crd "Error") (ne ($crd.kind | default "") "CustomResourceDefinition") }}
{{- fail (printf "%s: not one CustomResourceDefinition: %v" .path ($crd.Error | default $crd.kind)) }}
{{- end }}
{{- $meta := $crd.metadata }}
{{- $_ := set $meta "annotations" (merge (dict "helm.sh/resource-policy" "keep") ($meta.annotations | default dict)) }}
{{- $labels := dict "app.kubernetes.io/name" "shardgate-crds" "app.kubernetes.io/instance" .root.Release.Name "app.kubernetes.io/managed-by" .root.Release.Service "helm.sh/chart" (printf "%s-%s" .root.Chart.Name .root.Chart.Version) }}
{{- $_ := set $meta "labels" (merge $labels ($meta.labels | default dict)) }}
---
{{ toYaml $crd }}
{{- end -}}
