package io.retrybudget.deploy;

import static io.retrybudget.deploy.DeployFiles.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.Yaml;

/**
 * The Prometheus Operator's objects (deploy/k8s/prometheus-operator, a Kustomize component): the
 * PrometheusRule says exactly what deploy/prometheus/alerts.yml says, the ServiceMonitor scrapes the
 * port and path the coordinator serves its metrics on, and the overlay that uses the component
 * renders with kubectl's own Kustomize.
 */
class PrometheusOperatorTest {
  private static final String COMPONENT = "k8s/prometheus-operator/";

  @Test
  void thePrometheusRuleCarriesAlertsYmlGroupForGroup() {
    Map<String, Object> rule = DeployFiles.yaml(COMPONENT + "prometheusrule.yaml");
    assertEquals("monitoring.coreos.com/v1", rule.get("apiVersion"));
    assertEquals("PrometheusRule", rule.get("kind"));
    Object groups = at(DeployFiles.yaml("prometheus/alerts.yml"), "groups");
    assertEquals(groups, (Object) at(rule, "spec", "groups"),
        "prometheusrule.yaml's groups are alerts.yml's (edit alerts.yml, then copy its groups there)");
  }

  @Test
  void theServiceMonitorScrapesTheManagementPortOfTheCoordinatorsService() {
    Map<String, Object> monitor = DeployFiles.yaml(COMPONENT + "servicemonitor.yaml");
    assertEquals("ServiceMonitor", monitor.get("kind"));
    Map<String, Object> service = DeployFiles.yaml("k8s/base/service.yaml");
    assertEquals((Object) at(service, "metadata", "labels"), (Object) at(monitor, "spec", "selector", "matchLabels"),
        "selects the coordinator's Service by its labels");
    List<Map<String, Object>> ports = at(service, "spec", "ports");
    String port = at(monitor, "spec", "endpoints", 0, "port");
    assertTrue(ports.stream().anyMatch(p -> port.equals(p.get("name"))), "the Service has a port named " + port);
    assertEquals("management", port, "the management listener, which a flood on the API port does not delay");
    assertEquals("/metrics", (Object) at(monitor, "spec", "endpoints", 0, "path"));
    Map<String, Object> component = DeployFiles.yaml(COMPONENT + "kustomization.yaml");
    assertEquals("Component", component.get("kind"));
    assertEquals(List.of("servicemonitor.yaml", "prometheusrule.yaml"), component.get("resources"));
  }

  @Test
  void theMonitoredOverlayRendersWithKubectlKustomize() throws Exception {
    Path kubectl = Promtool.find("kubectl");
    Assumptions.assumeTrue(kubectl != null, "kubectl not on PATH: the overlay was not rendered "
        + "(install a kubectl of 1.21 or later, whose Kustomize knows components)");
    String out = Promtool.run(DeployFiles.ROOT, kubectl.toString(), "kustomize", DeployFiles.path("k8s/monitored").toString());
    List<Map<String, Object>> docs = new ArrayList<>();
    for (Object doc : new Yaml().loadAll(out)) {
      @SuppressWarnings("unchecked")
      Map<String, Object> m = (Map<String, Object>) doc;
      docs.add(m);
    }
    List<String> kinds = docs.stream().map(d -> (String) d.get("kind")).sorted().toList();
    for (String kind : List.of("Deployment", "Service", "ServiceMonitor", "PrometheusRule", "StatefulSet")) {
      assertTrue(kinds.contains(kind), kind + " rendered: " + kinds);
    }
    for (Map<String, Object> d : docs) {
      if (!"Namespace".equals(d.get("kind"))) {
        assertEquals("retry-budget", (Object) at(d, "metadata", "namespace"), d.get("kind") + " in the coordinator's namespace");
      }
    }
    Map<String, Object> rule = docs.stream().filter(d -> "PrometheusRule".equals(d.get("kind"))).findFirst().orElseThrow();
    assertEquals((Object) at(DeployFiles.yaml("prometheus/alerts.yml"), "groups"), (Object) at(rule, "spec", "groups"),
        "the rendered rule is alerts.yml's");
  }
}
