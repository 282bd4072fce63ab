package io.retrybudget.deploy;

import static io.retrybudget.deploy.DeployFiles.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.coordinator.Coordinator;
import io.retrybudget.coordinator.CoordinatorConfig;
import io.retrybudget.coordinator.budgets.BudgetsFile;
import io.retrybudget.deploy.demo.LoadDemo;
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
  static final int MANAGEMENT_PORT = CoordinatorConfig.DEFAULT_MANAGEMENT_PORT;

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
    Matcher expose = Pattern.compile("(?m)^EXPOSE (.*)$").matcher(df);
    assertTrue(expose.find(), "EXPOSE");
    assertTrue(List.of(expose.group(1).split(" ")).containsAll(List.of(String.valueOf(PORT), String.valueOf(MANAGEMENT_PORT))),
        "the API and management ports exposed: " + expose.group());
    assertTrue(df.contains("ENV COORDINATOR_PORT=" + PORT + " COORDINATOR_MANAGEMENT_PORT=" + MANAGEMENT_PORT));
    assertTrue(df.contains("http://127.0.0.1:" + MANAGEMENT_PORT + "/health/ready"), "the health check on the management port");
    assertTrue(df.contains("-pl coordinator,deploy,retry-budget-cli -am package"),
        "builds the coordinator (as the README does), the load demo and the operator CLI");
    assertTrue(df.contains("COPY --from=build /src/retry-budget-cli/target/retry-budget.jar /app/retry-budget.jar"),
        "the operator CLI in the image");
    assertTrue(df.contains("/src/coordinator/target/coordinator.jar"));
    assertTrue(Files.exists(Path.of("../coordinator/target/coordinator.jar")), "the jar the image copies is what the build makes");
    Matcher entry = Pattern.compile("(?m)^ENTRYPOINT (.*)$").matcher(df);
    assertTrue(entry.find() && entry.group(1).contains("\"-XX:+ExitOnOutOfMemoryError\""), "exits on OutOfMemoryError");
    Matcher user = Pattern.compile("(?m)^USER (\\d+)").matcher(df);
    assertTrue(user.find() && !user.group(1).equals("0"), "runs as a non-root user");
    assertTrue(df.indexOf("FROM ") != df.lastIndexOf("FROM "), "multi-stage");
    Matcher copy = Pattern.compile("(?m)^COPY (?!--)(\\S+) (\\S+)$").matcher(df);
    List<String> copied = new java.util.ArrayList<>();
    while (copy.find()) {
      assertTrue(Files.exists(Path.of("..", copy.group(1))), "Dockerfile copies " + copy.group(1) + ", which exists");
      copied.add(copy.group(1));
    }
    // Maven reads the whole reactor: every module's pom must be in the image, else the build fails
    // ("Child module ... does not exist"), whatever -pl says
    Matcher module = Pattern.compile("<module>([^<]+)</module>").matcher(DeployFiles.text("../pom.xml"));
    int modules = 0;
    while (module.find()) {
      modules++;
      String m = module.group(1);
      assertTrue(copied.contains(m + "/pom.xml") || copied.contains(m), "the image holds " + m + "/pom.xml");
    }
    assertTrue(modules >= 11, "the root pom's modules: " + modules);
    for (String built : List.of("lua", "client-sdk", "local-redis", "coordinator", "deploy")) {
      assertTrue(copied.contains(built), "the sources of " + built + " are in the image");
    }
    assertTrue(df.contains("COPY --from=build /src/deploy/target/load-demo.jar /app/load-demo.jar"), "the load demo");
    String pom = DeployFiles.text("pom.xml");
    assertTrue(pom.contains("<finalName>load-demo</finalName>")
        && pom.contains("<mainClass>" + LoadDemo.class.getName() + "</mainClass>"), "deploy/pom.xml shades the demo's jar");
  }

  @Test
  void composeRunsTheLoadDemoScrapedByPrometheus() {
    Map<String, Object> compose = DeployFiles.yaml("docker-compose.yml");
    Map<String, Object> demo = at(compose, "services", "demo");
    assertEquals(at(compose, "services", "coordinator", "build"), demo.get("build"), "the coordinator's image");
    List<String> entry = at(demo, "entrypoint");
    assertEquals(List.of("-jar", "/app/load-demo.jar"), entry.subList(entry.size() - 2, entry.size()));
    assertTrue(entry.contains("-XX:+ExitOnOutOfMemoryError"));
    Map<String, Object> env = at(demo, "environment");
    assertTrue(LoadDemo.VARIABLES.containsAll(env.keySet()), "unknown variables in " + env.keySet());
    Map<String, String> strings = new java.util.HashMap<>();
    env.forEach((k, v) -> strings.put(k, String.valueOf(v)));
    LoadDemo.Settings settings = LoadDemo.Settings.fromEnvironment(strings);
    assertEquals("redis://redis:6379", settings.redisUrl());
    assertTrue(settings.outageSeconds() > 5 * 60, "an outage long enough for RetryBudgetExhausted (1m + for: 4m)");
    List<String> ports = at(demo, "ports");
    assertTrue(ports.contains(settings.port() + ":" + settings.port()));
    String health = String.join(" ", (List<String>) at(demo, "healthcheck", "test"));
    assertTrue(health.contains("http://127.0.0.1:" + settings.port() + "/metrics"), health);
    // the clients' scrape job has the demo as its target
    Map<String, Object> prom = DeployFiles.yaml("prometheus/prometheus.yml");
    Map<String, Object> clientsJob = at(prom, "scrape_configs", 1);
    assertEquals("retry-budget-clients", clientsJob.get("job_name"));
    assertEquals("/metrics", clientsJob.get("metrics_path"));
    assertEquals(List.of("demo:" + settings.port()), at(clientsJob, "static_configs", 0, "targets"));
    List<String> promDepends = at(compose, "services", "prometheus", "depends_on");
    assertTrue(promDepends.containsAll(List.of("coordinator", "demo", "alertmanager")), promDepends.toString());
  }

  @Test
  void composeRunsAnAlertmanagerThatPrometheusSendsTo() throws Exception {
    Map<String, Object> compose = DeployFiles.yaml("docker-compose.yml");
    Map<String, Object> am = at(compose, "services", "alertmanager");
    assertTrue(((String) am.get("image")).startsWith("prom/alertmanager:v"), "a pinned Alertmanager image");
    List<String> command = at(am, "command");
    String configFile = command.stream().filter(c -> c.startsWith("--config.file=")).findFirst().orElseThrow()
        .substring("--config.file=".length());
    List<String> volumes = at(am, "volumes");
    assertTrue(volumes.contains("./alertmanager/alertmanager.yml:" + configFile + ":ro"), volumes.toString());
    List<String> ports = at(am, "ports");
    assertTrue(ports.contains("9093:9093"));
    Map<String, Object> prom = DeployFiles.yaml("prometheus/prometheus.yml");
    assertEquals(List.of("alertmanager:9093"), at(prom, "alerting", "alertmanagers", 0, "static_configs", 0, "targets"));
    // the configuration: every receiver a route names exists
    Map<String, Object> config = DeployFiles.yaml("alertmanager/alertmanager.yml");
    java.util.Set<String> receivers = new java.util.HashSet<>();
    for (Object r : (List<?>) at(config, "receivers")) {
      receivers.add(at(r, "name"));
    }
    Map<String, Object> route = at(config, "route");
    assertTrue(receivers.contains(route.get("receiver")), "the root route's receiver exists");
    for (Object r : (List<?>) route.getOrDefault("routes", List.of())) {
      assertTrue(receivers.contains(at(r, "receiver")), "a route's receiver exists: " + r);
    }
    List<String> groupBy = at(route, "group_by");
    assertTrue(groupBy.contains("budget"), "grouped by the budget label the alerts carry");
    // Alertmanager's own check, where amtool is installed (Debian's prometheus-alertmanager; .ci/run installs it)
    String out = Promtool.run(DeployFiles.path("alertmanager"), Promtool.require("amtool").toString(), "check-config",
        "alertmanager.yml");
    assertTrue(out.contains("SUCCESS"), out);
  }

  @Test
  void composeMatchesTheCoordinator() throws Exception {
    Map<String, Object> compose = DeployFiles.yaml("docker-compose.yml");
    Map<String, Object> coordinator = at(compose, "services", "coordinator");
    Map<String, Object> env = at(coordinator, "environment");
    assertTrue(CoordinatorConfig.VARIABLES.containsAll(env.keySet()), "unknown variables in " + env.keySet());
    assertEquals(String.valueOf(PORT), String.valueOf(env.get("COORDINATOR_PORT")));
    assertEquals(String.valueOf(MANAGEMENT_PORT), String.valueOf(env.get("COORDINATOR_MANAGEMENT_PORT")));
    assertEquals("redis://redis:6379", env.get("REDIS_URL"));
    List<String> ports = at(coordinator, "ports");
    assertTrue(ports.contains(PORT + ":" + PORT));
    assertTrue(ports.contains(MANAGEMENT_PORT + ":" + MANAGEMENT_PORT));
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
    assertEquals(List.of("coordinator:" + MANAGEMENT_PORT), at(coordinatorJob, "static_configs", 0, "targets"),
        "Prometheus scrapes the management listener");
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
    Map<String, Object> container = at(deployment, "spec", "template", "spec", "containers", 0);
    assertEquals(PORT, (int) at(container, "ports", 0, "containerPort"));
    List<String> command = at(container, "command");
    assertTrue(command.contains("-XX:+ExitOnOutOfMemoryError"), "the pod's JVM exits on OutOfMemoryError: " + command);
    assertEquals("/app/coordinator.jar", command.get(command.size() - 1), "the jar the image holds");
    assertTrue(DeployFiles.text("Dockerfile").contains("/app/coordinator.jar"));
    assertEquals("/health/live", at(container, "livenessProbe", "httpGet", "path"));
    assertEquals("/health/ready", at(container, "readinessProbe", "httpGet", "path"));
    assertEquals("http", at(container, "ports", 0, "name"));
    assertEquals("management", at(container, "ports", 1, "name"));
    assertEquals(MANAGEMENT_PORT, (int) at(container, "ports", 1, "containerPort"));
    // the probes and the scrape on the management listener: an API flood never queues them
    assertEquals("management", at(container, "livenessProbe", "httpGet", "port"));
    assertEquals("management", at(container, "readinessProbe", "httpGet", "port"));
    assertEquals(String.valueOf(MANAGEMENT_PORT),
        at(deployment, "spec", "template", "metadata", "annotations", "prometheus.io/port"));
    Map<String, Object> cmData = at(configMap, "data");
    assertEquals(String.valueOf(PORT), cmData.get("COORDINATOR_PORT"));
    assertEquals(String.valueOf(MANAGEMENT_PORT), cmData.get("COORDINATOR_MANAGEMENT_PORT"));
    // the token Secret is made out of band by the README's command, never by the kustomization
    Matcher createSecret = Pattern.compile("kubectl -n (\\S+) create secret generic (\\S+) --from-literal=(\\w+)=")
        .matcher(DeployFiles.text("README.md"));
    assertTrue(createSecret.find(), "deploy/README.md shows how to create the token Secret");
    assertEquals(at(DeployFiles.yaml("k8s/base/namespace.yaml"), "metadata", "name"), createSecret.group(1));
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
        assertEquals(createSecret.group(3), at(from, "secretKeyRef", "key"), name);
        assertEquals(createSecret.group(2), at(from, "secretKeyRef", "name"), name);
      }
    }
    assertTrue(names.containsAll(List.of("REDIS_URL", "COORDINATOR_TOKEN", "COORDINATOR_BUDGETS_FILE",
        "COORDINATOR_MANAGEMENT_PORT")));
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
    assertEquals("management", at(service, "spec", "ports", 1, "targetPort"));
    assertEquals(MANAGEMENT_PORT, (int) at(service, "spec", "ports", 1, "port"));
    Map<String, Object> pdb = DeployFiles.yaml("k8s/base/pdb.yaml");
    assertEquals(labels, at(pdb, "spec", "selector", "matchLabels"));
    assertEquals(true, at(deployment, "spec", "template", "spec", "securityContext", "runAsNonRoot"));
    // every resource the kustomizations name exists, and none of them is a Secret or makes one:
    // `kubectl apply -k` must never replace the real token
    for (String k : List.of("k8s/base", "k8s/standalone", "k8s/redis-cluster")) {
      Map<String, Object> kustomization = DeployFiles.yaml(k + "/kustomization.yaml");
      assertFalse(kustomization.containsKey("secretGenerator"), k + " generates a Secret");
      List<String> resources = at(kustomization, "resources");
      for (String r : resources) {
        assertTrue(Files.exists(DeployFiles.path(k).resolve(r)), k + " names " + r);
        if (!r.startsWith("..")) {
          for (Object doc : DeployFiles.yamlDocuments(k + "/" + r)) {
            assertFalse("Secret".equals(((Map<?, ?>) doc).get("kind")), k + "/" + r + " is a Secret");
          }
        }
      }
    }
    // read-only root, one writable emptyDir, and Vert.x's cache inside it
    assertEquals(true, at(container, "securityContext", "readOnlyRootFilesystem"));
    List<String> writable = writableMounts(deployment);
    assertEquals(List.of("/tmp"), writable, "the writable directories of the pod");
    String cacheDirBase = command.stream().filter(a -> a.startsWith("-Dvertx.cacheDirBase=")).findFirst()
        .orElseThrow(() -> new AssertionError("no -Dvertx.cacheDirBase in " + command)).substring("-Dvertx.cacheDirBase=".length());
    assertTrue(cacheDirBase.startsWith("/tmp/"), "Vert.x's cache in the emptyDir: " + cacheDirBase);
    assertTrue(DeployFiles.text("Dockerfile").contains("\"-Dvertx.cacheDirBase=" + cacheDirBase + "\""), "the image's entrypoint agrees");
  }

  /** The mount paths of the Deployment's emptyDir volumes: all a read-only root lets it write. */
  static List<String> writableMounts(Map<String, Object> deployment) {
    Map<String, Object> pod = at(deployment, "spec", "template", "spec");
    List<Map<String, Object>> volumes = at(pod, "volumes");
    Set<String> emptyDirs = new HashSet<>();
    for (Map<String, Object> v : volumes) {
      if (v.containsKey("emptyDir")) {
        emptyDirs.add((String) v.get("name"));
      }
    }
    List<String> paths = new ArrayList<>();
    for (Map<String, Object> m : DeployFiles.<List<Map<String, Object>>>at(pod, "containers", 0, "volumeMounts")) {
      if (emptyDirs.contains(m.get("name"))) {
        paths.add((String) m.get("mountPath"));
      }
    }
    return paths;
  }

  /**
   * The coordinator jar run like the Deployment runs it on its read-only root filesystem:
   * {@code java.io.tmpdir} is a directory nobody can write (/proc, read-only even for root), and
   * every {@code -D} flag of the Deployment's command that points into a writable emptyDir points
   * into a writable directory standing in for it. Without those flags the same JVM refuses to start.
   */
  @Test
  void theCoordinatorJarStartsWithAReadOnlyTmpdirAndTheDeploymentsFlags() throws Exception {
    Path jar = DeployFiles.ROOT.resolveSibling("coordinator/target/coordinator.jar");
    assertTrue(Files.isRegularFile(jar), jar + " (built by the reactor before deploy's tests)");
    Map<String, Object> deployment = DeployFiles.yaml("k8s/base/deployment.yaml");
    List<String> command = at(deployment, "spec", "template", "spec", "containers", 0, "command");
    List<String> mounts = writableMounts(deployment);
    Path writable = Files.createTempDirectory("emptydir");
    List<String> flags = new ArrayList<>();
    for (String arg : command.subList(1, command.indexOf("-jar"))) {
      if (arg.startsWith("-D")) {
        String value = arg.substring(arg.indexOf('=') + 1);
        for (String mount : mounts) {
          if (value.startsWith(mount + "/")) {
            arg = arg.substring(0, arg.indexOf('=') + 1) + writable.resolve(value.substring(mount.length() + 1));
          }
        }
        flags.add(arg);
      }
    }
    assertFalse(flags.isEmpty(), "the Deployment's -D flags: " + command);
    Path readOnly = Path.of("/proc");
    assertFalse(Files.isWritable(readOnly.resolve("vertx-cache")) || readOnly.resolve("vertx-cache").toFile().mkdir());

    StartResult without = startJar(jar, List.of("-Djava.io.tmpdir=" + readOnly));
    assertFalse(without.started(), "a read-only tmpdir alone must stop Vert.x: " + without.output());
    assertTrue(without.output().contains("vertx-cache"), without.output());

    List<String> with = new ArrayList<>(flags);
    with.add("-Djava.io.tmpdir=" + readOnly);
    StartResult started = startJar(jar, with);
    assertTrue(started.started(), "started with " + with + ": " + started.output());
  }

  record StartResult(boolean started, String output) {}

  /** Starts the jar, waits (at most 60 s) for its "listening" line or its exit, then stops it. */
  private static StartResult startJar(Path jar, List<String> jvmFlags) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(jvmFlags);
    cmd.add("-jar");
    cmd.add(jar.toString());
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().put("REDIS_URL", redis.uri());
    pb.environment().put("COORDINATOR_PORT", "0");
    pb.environment().put("COORDINATOR_TOKEN", "deploy-files-test-token-0123456789abcdef");
    Process process = pb.start();
    StringBuilder output = new StringBuilder();
    java.util.concurrent.CompletableFuture<Boolean> listening = new java.util.concurrent.CompletableFuture<>();
    Thread reader = new Thread(() -> {
      try (java.io.BufferedReader r = process.inputReader()) {
        String line;
        while ((line = r.readLine()) != null) {
          synchronized (output) {
            output.append(line).append('\n');
          }
          if (line.contains("coordinator listening on port")) {
            listening.complete(true);
          }
        }
      } catch (java.io.IOException e) {
        listening.completeExceptionally(e);
      }
      listening.complete(false);
    }, "jar-output");
    reader.setDaemon(true);
    reader.start();
    try {
      boolean started = listening.get(60, java.util.concurrent.TimeUnit.SECONDS);
      synchronized (output) {
        return new StartResult(started, output.toString());
      }
    } finally {
      process.destroy();
      if (!process.waitFor(20, java.util.concurrent.TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor();
      }
      reader.join(5_000);
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
      // on the management listener (where the manifests point them) and, as before, on the API port
      for (int port : List.of(c.managementPort(), c.port())) {
        for (String p : paths) {
          HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + p)).build(),
              HttpResponse.BodyHandlers.ofString());
          assertEquals(200, r.statusCode(), port + p);
        }
        HttpResponse<String> metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
            .build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, metrics.statusCode(), "the scrape path of prometheus.yml");
      }
      assertTrue(c.managementPort() != c.port(), "a listener of its own");
    }
  }
}
