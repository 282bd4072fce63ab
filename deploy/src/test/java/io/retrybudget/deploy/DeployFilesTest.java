package io.retrybudget.deploy;

import static io.retrybudget.deploy.DeployFiles.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.coordinator.BudgetsFile;
import io.retrybudget.coordinator.Coordinator;
import io.retrybudget.coordinator.CoordinatorConfig;
import io.retrybudget.testing.RedisExtension;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Static checks of deploy/: every YAML parses, and ports, paths, probes and environment variable
 * names are the ones the coordinator really uses (no Docker engine or cluster here to run them).
 */
class DeployFilesTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  static final int PORT = CoordinatorConfig.DEFAULT_PORT;

  @Test
  void everyYamlFileParses() throws Exception {
    List<Path> files;
    try (Stream<Path> s = Files.walk(DeployFiles.ROOT)) {
      files = s.filter(p -> p.toString().endsWith(".yml") || p.toString().endsWith(".yaml"))
          .filter(p -> !p.toString().contains("/target/")).toList();
    }
    assertTrue(files.size() >= 15, "found " + files);
    for (Path f : files) {
      assertFalse(DeployFiles.yamlDocuments(DeployFiles.ROOT.relativize(f).toString()).isEmpty(), f + " is empty");
    }
  }

  @Test
  void dockerfileMatchesTheCoordinator() {
    String df = DeployFiles.text("Dockerfile");
    assertTrue(df.contains("EXPOSE " + PORT));
    assertTrue(df.contains("ENV COORDINATOR_PORT=" + PORT));
    assertTrue(df.contains("http://127.0.0.1:" + PORT + "/health/ready"));
    assertTrue(df.contains("-pl coordinator -am package"), "builds the module the README builds");
    assertTrue(df.contains("/src/coordinator/target/coordinator.jar"));
    assertTrue(Files.exists(Path.of("../coordinator/target/coordinator.jar")), "the jar the image copies is what the build makes");
    Matcher entry = Pattern.compile("(?m)^ENTRYPOINT (.*)$").matcher(df);
    assertTrue(entry.find() && entry.group(1).contains("\"-XX:+ExitOnOutOfMemoryError\""), "exits on OutOfMemoryError");
    Matcher user = Pattern.compile("(?m)^USER (\\d+)").matcher(df);
    assertTrue(user.find() && !user.group(1).equals("0"), "runs as a non-root user");
    assertTrue(df.indexOf("FROM ") != df.lastIndexOf("FROM "), "multi-stage");
    for (String copied : List.of("pom.xml", "lua", "client-sdk", "coordinator", "bench/pom.xml", "deploy/pom.xml")) {
      assertTrue(Files.exists(Path.of("..", copied)), "Dockerfile copies " + copied);
    }
  }

  @Test
  void composeMatchesTheCoordinator() throws Exception {
    Map<String, Object> compose = DeployFiles.yaml("docker-compose.yml");
    Map<String, Object> coordinator = at(compose, "services", "coordinator");
    Map<String, Object> env = at(coordinator, "environment");
    assertTrue(CoordinatorConfig.VARIABLES.containsAll(env.keySet()), "unknown variables in " + env.keySet());
    assertEquals(String.valueOf(PORT), String.valueOf(env.get("COORDINATOR_PORT")));
    assertEquals("redis://redis:6379", env.get("REDIS_URL"));
    List<String> ports = at(coordinator, "ports");
    assertTrue(ports.contains(PORT + ":" + PORT));
    List<String> volumes = at(coordinator, "volumes");
    String budgetsMount = volumes.stream().filter(v -> v.startsWith("./budgets.json:")).findFirst().orElseThrow();
    assertEquals(env.get("COORDINATOR_BUDGETS_FILE"), budgetsMount.split(":")[1]);
    assertFalse(BudgetsFile.read(DeployFiles.path("budgets.json")).isEmpty(), "the example budgets file is valid");
    assertTrue(List.of("always", "unless-stopped", "on-failure").contains(coordinator.get("restart")),
        "Compose restarts a coordinator that exited (on OutOfMemoryError): " + coordinator.get("restart"));
    Map<String, Object> nofile = at(coordinator, "ulimits", "nofile");
    assertTrue((int) nofile.get("soft") > CoordinatorConfig.fromEnvironment(Map.of()).http().maxConnections(),
        "descriptors for the connection cap");
    List<String> redisCommand = at(compose, "services", "redis", "command");
    assertTrue(redisCommand.contains("--appendonly"), "Redis keeps the budget configuration");
    // Prometheus gets the files its config names
    List<String> promVolumes = at(compose, "services", "prometheus", "volumes");
    Map<String, Object> prom = DeployFiles.yaml("prometheus/prometheus.yml");
    List<String> ruleFiles = at(prom, "rule_files");
    for (String rule : ruleFiles) {
      assertTrue(promVolumes.stream().anyMatch(v -> v.endsWith(":" + rule + ":ro")), rule + " mounted");
    }
    List<Object> scrapes = at(prom, "scrape_configs");
    Map<String, Object> coordinatorJob = at(scrapes, 0);
    assertEquals("retry-budget-coordinator", coordinatorJob.get("job_name"));
    assertEquals("/metrics", coordinatorJob.get("metrics_path"));
    assertEquals(List.of("coordinator:" + PORT), at(coordinatorJob, "static_configs", 0, "targets"));
    // Grafana: provisioned dashboard folder is the mounted one
    List<String> grafanaVolumes = at(compose, "services", "grafana", "volumes");
    Map<String, Object> provider = at(DeployFiles.yaml("grafana/provisioning/dashboards/retry-budget.yml"), "providers", 0);
    String dashboardsPath = at(provider, "options", "path");
    assertTrue(grafanaVolumes.contains("./grafana/dashboards:" + dashboardsPath + ":ro"));
    assertTrue(Files.exists(DeployFiles.path("grafana/dashboards/retry-budgets.json")));
  }

  @Test
  void kubernetesManifestsMatchTheCoordinator() throws Exception {
    Map<String, Object> deployment = DeployFiles.yaml("k8s/base/deployment.yaml");
    Map<String, Object> configMap = DeployFiles.yaml("k8s/base/configmap.yaml");
    Map<String, Object> secret = DeployFiles.yaml("k8s/base/secret.yaml");
    Map<String, Object> container = at(deployment, "spec", "template", "spec", "containers", 0);
    assertEquals(PORT, (int) at(container, "ports", 0, "containerPort"));
    List<String> command = at(container, "command");
    assertTrue(command.contains("-XX:+ExitOnOutOfMemoryError"), "the pod's JVM exits on OutOfMemoryError: " + command);
    assertEquals("/app/coordinator.jar", command.get(command.size() - 1), "the jar the image holds");
    assertTrue(DeployFiles.text("Dockerfile").contains("/app/coordinator.jar"));
    assertEquals("/health/live", at(container, "livenessProbe", "httpGet", "path"));
    assertEquals("/health/ready", at(container, "readinessProbe", "httpGet", "path"));
    assertEquals("http", at(container, "ports", 0, "name"));
    assertEquals("http", at(container, "readinessProbe", "httpGet", "port"));
    Map<String, Object> cmData = at(configMap, "data");
    Map<String, Object> secretData = at(secret, "stringData");
    IllegalArgumentException placeholder = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> CoordinatorConfig.fromEnvironment(Map.of("COORDINATOR_TOKEN", (String) secretData.get("COORDINATOR_TOKEN"))),
        "the example Secret's placeholder token is refused at start");
    assertTrue(placeholder.getMessage().contains("openssl rand"), placeholder.getMessage());
    List<Map<String, Object>> env = at(container, "env");
    Set<String> names = new HashSet<>();
    for (Map<String, Object> e : env) {
      String name = (String) e.get("name");
      names.add(name);
      assertTrue(CoordinatorConfig.VARIABLES.contains(name), "unknown variable " + name);
      Map<String, Object> from = at(e, "valueFrom");
      if (from.containsKey("configMapKeyRef")) {
        assertTrue(cmData.containsKey((String) at(from, "configMapKeyRef", "key")), name);
        assertEquals((Object) at(configMap, "metadata", "name"), at(from, "configMapKeyRef", "name"));
      } else {
        assertTrue(secretData.containsKey((String) at(from, "secretKeyRef", "key")), name);
        assertEquals((Object) at(secret, "metadata", "name"), at(from, "secretKeyRef", "name"));
      }
    }
    assertTrue(names.containsAll(List.of("REDIS_URL", "COORDINATOR_TOKEN", "COORDINATOR_BUDGETS_FILE")));
    // the budgets file lands where COORDINATOR_BUDGETS_FILE says
    String file = (String) cmData.get("COORDINATOR_BUDGETS_FILE");
    String mountPath = at(container, "volumeMounts", 0, "mountPath");
    Map<String, Object> volume = at(deployment, "spec", "template", "spec", "volumes", 0);
    assertEquals(file, mountPath + "/" + at(volume, "configMap", "items", 0, "path"));
    assertTrue(cmData.containsKey((String) at(volume, "configMap", "items", 0, "key")));
    Path budgets = Files.createTempFile("budgets", ".json");
    Files.writeString(budgets, (String) cmData.get("budgets.json"));
    assertFalse(BudgetsFile.read(budgets).isEmpty(), "the ConfigMap's budgets file is valid");
    // Service and PodDisruptionBudget select the pods
    Map<String, Object> labels = at(deployment, "spec", "template", "metadata", "labels");
    Map<String, Object> service = DeployFiles.yaml("k8s/base/service.yaml");
    assertEquals(labels, at(service, "spec", "selector"));
    assertEquals("http", at(service, "spec", "ports", 0, "targetPort"));
    Map<String, Object> pdb = DeployFiles.yaml("k8s/base/pdb.yaml");
    assertEquals(labels, at(pdb, "spec", "selector", "matchLabels"));
    assertEquals(true, at(deployment, "spec", "template", "spec", "securityContext", "runAsNonRoot"));
    // every resource the kustomizations name exists
    for (String k : List.of("k8s/base", "k8s/standalone", "k8s/redis-cluster")) {
      List<String> resources = at(DeployFiles.yaml(k + "/kustomization.yaml"), "resources");
      for (String r : resources) {
        assertTrue(Files.exists(DeployFiles.path(k).resolve(r)), k + " names " + r);
      }
    }
  }

  @Test
  void theDocumentedRunLineExitsOnOutOfMemory() throws Exception {
    String readme = Files.readString(Path.of("../coordinator/README.md"));
    Matcher run = Pattern.compile("(?m)^\\s+java (.*)-jar coordinator/target/coordinator.jar").matcher(readme);
    assertTrue(run.find(), "the README's run line");
    assertTrue(run.group(1).contains("-XX:+ExitOnOutOfMemoryError"), run.group());
  }

  @Test
  void theRedisClusterVariantGivesTheCoordinatorClusterNodes() {
    Map<String, Object> cm = DeployFiles.yaml("k8s/redis-cluster/coordinator-cluster-env.yaml");
    String nodes = at(cm, "data", "REDIS_CLUSTER_NODES");
    assertEquals(3, nodes.split(",").length);
    for (String node : nodes.split(",")) {
      assertTrue(node.endsWith(":6379"), node);
    }
    // validated like the coordinator validates it
    CoordinatorConfig config = CoordinatorConfig.fromEnvironment(Map.of("REDIS_CLUSTER_NODES", nodes));
    assertEquals(3, config.clusterNodes().size());
    String kustomization = DeployFiles.text("k8s/redis-cluster/kustomization.yaml");
    assertTrue(kustomization.contains("name: REDIS_CLUSTER_NODES") && kustomization.contains("key: REDIS_CLUSTER_NODES"));
  }

  @Test
  void theProbePathsAnswerOnARealCoordinator() throws Exception {
    List<String> paths = new ArrayList<>();
    Map<String, Object> container = at(DeployFiles.yaml("k8s/base/deployment.yaml"), "spec", "template", "spec", "containers", 0);
    paths.add(at(container, "livenessProbe", "httpGet", "path"));
    paths.add(at(container, "readinessProbe", "httpGet", "path"));
    try (Coordinator c = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
        "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", "t")))) {
      HttpClient http = HttpClient.newHttpClient();
      for (String p : paths) {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + c.port() + p)).build(),
            HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), p);
      }
      HttpResponse<String> metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + c.port() + "/metrics"))
          .build(), HttpResponse.BodyHandlers.ofString());
      assertEquals(200, metrics.statusCode(), "the scrape path of prometheus.yml");
    }
  }
}
