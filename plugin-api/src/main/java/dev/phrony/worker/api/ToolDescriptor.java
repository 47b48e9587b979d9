package dev.phrony.worker.api;

import java.util.Optional;

/**
 * What a handler serves, as advertised to the runtime. The routing key is {@code tool@version}.
 *
 * <p>Build one with {@link #builder(String)}:
 *
 * <pre>{@code
 * ToolDescriptor.builder("weather.get-forecast")
 *     .version("1.0.0")
 *     .sideEffectClass(SideEffectClass.READ_ONLY)
 *     .maxConcurrency(16)
 *     .description("Forecast for a city")
 *     .build();
 * }</pre>
 *
 * <p>The host validates descriptors when it loads a plugin and reports a bad one with the plugin's
 * path instead of serving it.
 *
 * @param tool tool name as bound in agent manifests (the manifest's {@code ref} without any
 *     {@code @constraint}), e.g. {@code payments.process-payment}
 * @param version the version a manifest binding names; {@value #DEFAULT_VERSION} for unversioned
 *     bindings
 * @param contractVersion version of the handler's input/output contract (informational)
 * @param maxConcurrency how many calls may run at once in this host
 * @param sideEffectClass what a call does to the world
 * @param description one line for humans
 * @param inputSchema JSON Schema text of the arguments, if the handler publishes one
 */
public record ToolDescriptor(
    String tool,
    String version,
    String contractVersion,
    int maxConcurrency,
    SideEffectClass sideEffectClass,
    String description,
    Optional<String> inputSchema) {

  /** The version the runtime routes unversioned bindings to. */
  public static final String DEFAULT_VERSION = "default";

  /** Calls a handler may run at once when it does not say. */
  public static final int DEFAULT_MAX_CONCURRENCY = 4;

  /** Contract version when a handler does not say. */
  public static final String DEFAULT_CONTRACT_VERSION = "1";

  /**
   * Normalises absent values; validation of content is the host's job, so it can name the plugin.
   */
  public ToolDescriptor {
    version = version == null || version.isEmpty() ? DEFAULT_VERSION : version;
    contractVersion = contractVersion == null ? DEFAULT_CONTRACT_VERSION : contractVersion;
    description = description == null ? "" : description;
    inputSchema = inputSchema == null ? Optional.empty() : inputSchema;
  }

  /** {@code tool@version}, the runtime's routing key. */
  public String key() {
    return tool + "@" + version;
  }

  /** Starts a descriptor for {@code tool} with the defaults documented on each setter. */
  public static Builder builder(String tool) {
    return new Builder(tool);
  }

  /** Builder for {@link ToolDescriptor}. */
  public static final class Builder {
    private final String tool;
    private String version = DEFAULT_VERSION;
    private String contractVersion = DEFAULT_CONTRACT_VERSION;
    private int maxConcurrency = DEFAULT_MAX_CONCURRENCY;
    private SideEffectClass sideEffectClass;
    private String sideEffectClassName;
    private String description = "";
    private String inputSchema;

    private Builder(String tool) {
      this.tool = tool;
    }

    /** Version of the tool; {@value ToolDescriptor#DEFAULT_VERSION} when not set. */
    public Builder version(String version) {
      this.version = version;
      return this;
    }

    /** Contract version; {@value ToolDescriptor#DEFAULT_CONTRACT_VERSION} when not set. */
    public Builder contractVersion(String contractVersion) {
      this.contractVersion = contractVersion;
      return this;
    }

    /** Concurrent calls; {@value ToolDescriptor#DEFAULT_MAX_CONCURRENCY} when not set. */
    public Builder maxConcurrency(int maxConcurrency) {
      this.maxConcurrency = maxConcurrency;
      return this;
    }

    /** Side-effect class; required. */
    public Builder sideEffectClass(SideEffectClass sideEffectClass) {
      this.sideEffectClass = sideEffectClass;
      this.sideEffectClassName = null;
      return this;
    }

    /**
     * Side-effect class by its wire name (e.g. from a plugin's own config file); an unknown name
     * fails in {@link #build()}.
     */
    public Builder sideEffectClass(String wireName) {
      this.sideEffectClassName = wireName;
      this.sideEffectClass = null;
      return this;
    }

    /** One line for humans. */
    public Builder description(String description) {
      this.description = description;
      return this;
    }

    /**
     * JSON Schema text of the arguments. The host checks every call's arguments against it before
     * the handler runs (JSON Schema 2020-12 unless {@code $schema} names another dialect), so a
     * handler need not check what the schema already says.
     */
    public Builder inputSchema(String inputSchema) {
      this.inputSchema = inputSchema;
      return this;
    }

    /**
     * The input schema from a UTF-8 resource beside {@code owner} (as {@link
     * Class#getResourceAsStream} finds it: a plain name is in {@code owner}'s package, {@code
     * /x/y.json} from the root of the plugin).
     *
     * @throws IllegalArgumentException if the resource is missing or unreadable
     */
    public Builder inputSchemaFrom(Class<?> owner, String resource) {
      try (java.io.InputStream in = owner.getResourceAsStream(resource)) {
        if (in == null) {
          throw new IllegalArgumentException(
              "input schema resource '"
                  + resource
                  + "' not found beside "
                  + owner.getName()
                  + ": put it in src/main/resources/"
                  + (resource.startsWith("/")
                      ? resource.substring(1)
                      : owner.getPackageName().replace('.', '/') + "/" + resource));
        }
        return inputSchema(new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
      } catch (java.io.IOException e) {
        throw new IllegalArgumentException(
            "input schema resource '" + resource + "' cannot be read: " + e.getMessage(), e);
      }
    }

    /**
     * @throws IllegalArgumentException when the side-effect class was given by an unknown name
     */
    public ToolDescriptor build() {
      SideEffectClass sec =
          sideEffectClassName != null
              ? SideEffectClass.fromWire(sideEffectClassName)
              : sideEffectClass;
      return new ToolDescriptor(
          tool,
          version,
          contractVersion,
          maxConcurrency,
          sec,
          description,
          Optional.ofNullable(inputSchema));
    }
  }
}
