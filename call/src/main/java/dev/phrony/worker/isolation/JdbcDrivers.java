package dev.phrony.worker.isolation;

import java.sql.Driver;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Supplier;

/**
 * Deregisters the JDBC drivers a plugin registered. {@link DriverManager} shows and deregisters a
 * driver only to a caller whose class loader sees the driver's class, so this class is defined
 * inside the plugin's loader ({@link PluginClassLoader#deregisterJdbcDrivers}) and run from there.
 * Returns the names of the drivers it deregistered.
 */
public final class JdbcDrivers implements Supplier<List<String>> {
  @Override
  public List<String> get() {
    ClassLoader own = JdbcDrivers.class.getClassLoader();
    List<String> removed = new ArrayList<>();
    for (Driver d : Collections.list(DriverManager.getDrivers())) {
      if (d.getClass().getClassLoader() == own) {
        try {
          DriverManager.deregisterDriver(d);
          removed.add(d.getClass().getName());
        } catch (SQLException | SecurityException e) {
          // left registered: the unload's watch names what still pins the loader
        }
      }
    }
    return removed;
  }
}
