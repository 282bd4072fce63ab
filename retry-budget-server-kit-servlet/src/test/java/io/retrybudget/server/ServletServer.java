package io.retrybudget.server;

import jakarta.servlet.Filter;
import jakarta.servlet.MultipartConfigElement;
import jakarta.servlet.http.HttpServlet;
import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import org.apache.catalina.Context;
import org.apache.catalina.Wrapper;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;
import org.apache.tomcat.util.descriptor.web.FilterDef;
import org.apache.tomcat.util.descriptor.web.FilterMap;
import org.eclipse.jetty.ee11.servlet.FilterHolder;
import org.eclipse.jetty.ee11.servlet.ServletContextHandler;
import org.eclipse.jetty.ee11.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/**
 * One embedded servlet container for a test, Jetty 12.1 (ee11) or Tomcat 11 (both Servlet 6.1):
 * servlets and filters (mapped for REQUEST) are added before {@link #start()}.
 */
abstract class ServletServer implements AutoCloseable {
  record Mapped(String name, HttpServlet servlet, String pattern, MultipartConfigElement multipart) {}

  record FilterAt(String name, Filter filter, String pattern, boolean async) {}

  protected final List<Mapped> servlets = new ArrayList<>();
  protected final List<FilterAt> filters = new ArrayList<>();

  static ServletServer jetty() {
    return new JettyServer();
  }

  static ServletServer tomcat() {
    return new TomcatServer();
  }

  /** The container's name, for messages. */
  abstract String name();

  ServletServer servlet(String pattern, HttpServlet servlet) {
    return servlet(pattern, servlet, null);
  }

  /** A servlet, with a multipart configuration (for {@code getParts}) or null. */
  ServletServer servlet(String pattern, HttpServlet servlet, MultipartConfigElement multipart) {
    servlets.add(new Mapped("servlet" + servlets.size(), servlet, pattern, multipart));
    return this;
  }

  /** A filter, in the order added, before the servlets it maps to. */
  ServletServer filter(String pattern, Filter filter) {
    filters.add(new FilterAt("filter" + filters.size(), filter, pattern, false));
    return this;
  }

  /** A filter mapped for REQUEST and ASYNC dispatches (a filter that waits with {@code Waiting.ASYNC}). */
  ServletServer asyncFilter(String pattern, Filter filter) {
    filters.add(new FilterAt("filter" + filters.size(), filter, pattern, true));
    return this;
  }

  /** Starts on a free loopback port and returns it. */
  abstract int start() throws Exception;

  @Override
  public abstract void close() throws Exception;

  private static final class JettyServer extends ServletServer {
    private Server server;

    @Override
    String name() {
      return "Jetty 12.1";
    }

    @Override
    int start() throws Exception {
      server = new Server();
      ServerConnector connector = new ServerConnector(server);
      connector.setHost("127.0.0.1");
      connector.setPort(0);
      server.addConnector(connector);
      ServletContextHandler context = new ServletContextHandler();
      context.setContextPath("/");
      for (Mapped m : servlets) {
        ServletHolder holder = new ServletHolder(m.name(), m.servlet());
        if (m.multipart() != null) {
          holder.getRegistration().setMultipartConfig(m.multipart());
        }
        context.addServlet(holder, m.pattern());
      }
      for (FilterAt f : filters) {
        FilterHolder holder = new FilterHolder(f.filter());
        holder.setAsyncSupported(true);
        context.addFilter(holder, f.pattern(), f.async()
            ? EnumSet.of(jakarta.servlet.DispatcherType.REQUEST, jakarta.servlet.DispatcherType.ASYNC)
            : EnumSet.of(jakarta.servlet.DispatcherType.REQUEST));
      }
      server.setHandler(context);
      server.start();
      return connector.getLocalPort();
    }

    @Override
    public void close() throws Exception {
      if (server != null) {
        server.stop();
      }
    }
  }

  private static final class TomcatServer extends ServletServer {
    private Tomcat tomcat;
    private File base;

    @Override
    String name() {
      return "Tomcat 11";
    }

    @Override
    int start() throws Exception {
      base = Files.createTempDirectory("tomcat").toFile();
      tomcat = new Tomcat();
      tomcat.setBaseDir(base.getAbsolutePath());
      Connector connector = new Connector();
      connector.setPort(0);
      connector.setProperty("address", "127.0.0.1");
      tomcat.setConnector(connector);
      Context context = tomcat.addContext("", base.getAbsolutePath());
      for (Mapped m : servlets) {
        Wrapper w = Tomcat.addServlet(context, m.name(), m.servlet());
        w.setAsyncSupported(true);
        if (m.multipart() != null) {
          w.setMultipartConfigElement(m.multipart());
        }
        context.addServletMappingDecoded(m.pattern(), m.name());
      }
      for (FilterAt f : filters) {
        FilterDef def = new FilterDef();
        def.setFilterName(f.name());
        def.setFilter(f.filter());
        def.setAsyncSupported("true");
        context.addFilterDef(def);
        FilterMap map = new FilterMap();
        map.setFilterName(f.name());
        map.addURLPatternDecoded(f.pattern());
        map.setDispatcher("REQUEST");
        if (f.async()) {
          map.setDispatcher("ASYNC");
        }
        context.addFilterMap(map);
      }
      tomcat.start();
      return connector.getLocalPort();
    }

    @Override
    public void close() throws Exception {
      if (tomcat != null) {
        tomcat.stop();
        tomcat.destroy();
      }
      if (base != null) {
        try (var paths = Files.walk(base.toPath())) {
          paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
      }
    }
  }
}
