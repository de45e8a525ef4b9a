// Embedding vkgmm in an app that owns the device: device_requirements() before vkCreateDevice,
// Context::wrap() on the app's handles (never destroying them), a queue-less record-only context, and
// the plan's workspace size. The test plays the app: its own instance (validation layer + a messenger
// that fails the test on any message), device, command pool and submits.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "vkgmm/vkgmm.hpp"

namespace {

struct App {
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  const char* matrix_extension = nullptr;  // enabled (App(true) on a device with matrix units)
  bool storage16 = false;                   // storageBuffer16BitAccess enabled (App(true) where offered)
  std::vector<std::string> messages;

  static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
    if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT)
      static_cast<App*>(user)->messages.emplace_back(data->pMessage ? data->pMessage : "");
    return VK_FALSE;
  }

  // with_matrix: enable the matrix units where device_requirements(instance, physical) names them, as
  // requirements.hpp says an app does.
  explicit App(bool with_matrix = false) {
    VkApplicationInfo ai{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    ai.apiVersion = VK_API_VERSION_1_2;
    const char* layer = "VK_LAYER_KHRONOS_validation";
    const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkDebugUtilsMessengerCreateInfoEXT dm{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    dm.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    dm.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
    dm.pfnUserCallback = on_message;
    dm.pUserData = this;
    VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pNext = &dm;
    ici.pApplicationInfo = &ai;
    ici.enabledLayerCount = 1;
    ici.ppEnabledLayerNames = &layer;
    ici.enabledExtensionCount = 1;
    ici.ppEnabledExtensionNames = &ext;
    EXPECT_EQ(vkCreateInstance(&ici, nullptr, &instance), VK_SUCCESS);
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    create(instance, &dm, nullptr, &messenger);
    // The device an app would pick: a GPU before a CPU driver (as vkgmm's own contexts do), so that on a
    // machine with both these tests wrap the GPU.
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(instance, &n, nullptr);
    std::vector<VkPhysicalDevice> devices(n);
    vkEnumeratePhysicalDevices(instance, &n, devices.data());
    auto rank = [](VkPhysicalDevice d) {
      VkPhysicalDeviceProperties props;
      vkGetPhysicalDeviceProperties(d, &props);
      switch (props.deviceType) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
        default: return 3;
      }
    };
    for (VkPhysicalDevice d : devices)
      if (!physical || rank(d) < rank(physical)) physical = d;
    const vkgmm::DeviceRequirements req = vkgmm::device_requirements(physical);
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, nullptr);
    std::vector<VkQueueFamilyProperties> fams(n);
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, fams.data());
    while (family < n && !(fams[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++family;
    const float priority = 1.f;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    std::vector<const char*> extensions = req.required_extensions;
    // The matrix units' features (VkPhysicalDeviceCooperativeMatrixFeaturesKHR / ...NV share a layout; the
    // KHR values are the registry's, for Vulkan headers older than the extension).
    struct CoopFeatures {
      VkStructureType sType;
      void* pNext;
      VkBool32 cooperativeMatrix, cooperativeMatrixRobustBufferAccess;
    } coop{};
    VkPhysicalDeviceSubgroupSizeControlFeaturesEXT size_control{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT};
    VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    matrix_extension = with_matrix ? vkgmm::device_requirements(instance, physical).matrix_extension : nullptr;
    storage16 = with_matrix && req.storage_buffer_16bit;
    if (storage16) {
      v11.storageBuffer16BitAccess = VK_TRUE;
      features.pNext = &v11;
      dci.pNext = &features;
    }
    if (matrix_extension) {
      const bool khr = std::strcmp(matrix_extension, "VK_KHR_cooperative_matrix") == 0;
      coop.sType = khr ? static_cast<VkStructureType>(1000506000)
                       : VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
      coop.cooperativeMatrix = VK_TRUE;
      // Where the device has them (a device whose subgroups are one size may have neither).
      VkPhysicalDeviceSubgroupSizeControlFeaturesEXT has{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT};
      VkPhysicalDeviceFeatures2 asked{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
      asked.pNext = &has;
      vkGetPhysicalDeviceFeatures2(physical, &asked);
      size_control.subgroupSizeControl = has.subgroupSizeControl;
      size_control.computeFullSubgroups = has.computeFullSubgroups;
      v12.shaderFloat16 = v12.vulkanMemoryModel = v12.vulkanMemoryModelDeviceScope = VK_TRUE;
      v11.pNext = &v12;  // v11 is on the chain: the matrix extension is named only where 16-bit storage is
      v12.pNext = &coop;
      coop.pNext = &size_control;
      extensions.push_back(matrix_extension);
      extensions.push_back("VK_EXT_subgroup_size_control");
    }
    dci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    dci.ppEnabledExtensionNames = extensions.data();
    EXPECT_EQ(vkCreateDevice(physical, &dci, nullptr, &device), VK_SUCCESS);
    vkGetDeviceQueue(device, family, 0, &queue);
  }

  ~App() {
    vkDestroyDevice(device, nullptr);
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
    destroy(instance, messenger, nullptr);
    vkDestroyInstance(instance, nullptr);
    for (const std::string& m : messages) ADD_FAILURE() << "validation message: " << m;
  }

  vkgmm::BorrowedDevice borrowed() const { return {instance, physical, device, queue, family}; }
};

vkgmm::GmmProblem small_problem() {
  vkgmm::GmmProblem p;
  p.m = 12;
  p.k = 8;
  p.n = 4;
  p.group_sizes = {5, 0, 6};
  return p;
}

vkgmm::Status status_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const vkgmm::Error& e) {
    return e.status();
  }
  return vkgmm::Status::ok;
}

TEST(Embedding, RequirementsListWhatToEnable) {
  const vkgmm::DeviceRequirements r = vkgmm::device_requirements();
  EXPECT_EQ(r.min_api_version, VK_API_VERSION_1_2);
  ASSERT_EQ(r.required_extensions.size(), 1u);
  EXPECT_STREQ(r.required_extensions[0], VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  ASSERT_EQ(r.optional_features.size(), 1u);
  EXPECT_STREQ(r.optional_features[0], "storageBuffer16BitAccess");
  const vkgmm::DeviceRequirements none = vkgmm::device_requirements(VK_NULL_HANDLE);
  EXPECT_FALSE(none.supported);
  EXPECT_FALSE(none.missing.empty());
}

TEST(Embedding, RequirementsOfARealDevice) {
  App app;
  const vkgmm::DeviceRequirements r = vkgmm::device_requirements(app.physical);
  EXPECT_TRUE(r.supported) << (r.missing.empty() ? "" : r.missing.front());
  EXPECT_TRUE(r.missing.empty());
}

TEST(Embedding, WrapRefusesBadHandles) {
  App app;
  vkgmm::BorrowedDevice d = app.borrowed();
  d.device = VK_NULL_HANDLE;
  EXPECT_EQ(status_of([&] { vkgmm::Context::wrap(d); }), vkgmm::Status::invalid_argument);
  d = app.borrowed();
  d.queue_family = 99;
  EXPECT_EQ(status_of([&] { vkgmm::Context::wrap(d); }), vkgmm::Status::invalid_argument);
  d = app.borrowed();
  d.get_instance_proc_addr = [](VkInstance, const char*) -> PFN_vkVoidFunction { return nullptr; };
  EXPECT_EQ(status_of([&] { vkgmm::Context::wrap(d); }), vkgmm::Status::invalid_argument);
}

// The options that do not apply to a wrapped device (the app made it, and enabled its matrix extension)
// are ignored, not checked.
TEST(Embedding, WrapIgnoresTheOwnedDevicesOptions) {
  App app;
  vkgmm::ContextOptions o;
  o.matrix_extension = "VK_bogus_matrix";
  o.device = "no such device";
  vkgmm::Context ctx = vkgmm::Context::wrap(app.borrowed(), o);
  EXPECT_EQ(ctx.options().matrix_extension, "");
}

// The app's device outlives vkgmm's context and plans, and is still whole after them.
TEST(Embedding, WrapRunsAndDestroysNothingBorrowed) {
  App app;
  vkgmm::BorrowedDevice d = app.borrowed();
  d.get_instance_proc_addr = vkGetInstanceProcAddr;  // the app's loader entry, used for the extension
  {
    vkgmm::Context ctx = vkgmm::Context::wrap(d);
    vkgmm::GmmPlan plan(ctx, small_problem());
    EXPECT_GT(plan.metadata_bytes(), 0u);
    vkgmm::Buffer lhs = ctx.create_buffer(plan.sizes().lhs), rhs = ctx.create_buffer(plan.sizes().rhs),
                  out = ctx.create_buffer(plan.sizes().out);
    std::vector<float> ones(12 * 8, 1.f), w(3 * 8 * 4, 0.5f), y(12 * 4, -1.f);
    lhs.upload(ones.data(), ones.size() * 4);
    rhs.upload(w.data(), w.size() * 4);
    ctx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, {lhs.view(), rhs.view(), out.view(), {}}); });
    out.download(y.data(), y.size() * 4);
    for (int r = 0; r < 12; ++r) EXPECT_EQ(y[r * 4], r < 11 ? 4.f : 0.f) << "row " << r;
  }
  // Still the app's: a queue wait and an object round trip on the device work after vkgmm is gone.
  EXPECT_EQ(vkQueueWaitIdle(app.queue), VK_SUCCESS);
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence = VK_NULL_HANDLE;
  EXPECT_EQ(vkCreateFence(app.device, &fci, nullptr, &fence), VK_SUCCESS);
  vkDestroyFence(app.device, fence, nullptr);
}

// Without a queue, vkgmm only records: submit_and_wait refuses, the app's own submit runs the plan.
TEST(Embedding, QueuelessContextRecordsIntoTheAppsCommandBuffer) {
  App app;
  vkgmm::BorrowedDevice d = app.borrowed();
  d.queue = VK_NULL_HANDLE;
  vkgmm::Context ctx = vkgmm::Context::wrap(d);
  vkgmm::GmmProblem p = small_problem();
  vkgmm::GmmPlan plan(ctx, p);
  vkgmm::Buffer lhs = ctx.create_buffer(plan.sizes().lhs), rhs = ctx.create_buffer(plan.sizes().rhs),
                out = ctx.create_buffer(plan.sizes().out);
  std::vector<float> x(12 * 8, 2.f), w(3 * 8 * 4, 0.25f), y(12 * 4, -1.f);
  lhs.upload(x.data(), x.size() * 4);
  rhs.upload(w.data(), w.size() * 4);
  const vkgmm::GmmOperands ops{lhs.view(), rhs.view(), out.view(), {}};
  EXPECT_EQ(status_of([&] { ctx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); }); }),
            vkgmm::Status::invalid_argument);

  VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpi.queueFamilyIndex = app.family;
  VkCommandPool pool = VK_NULL_HANDLE;
  ASSERT_EQ(vkCreateCommandPool(app.device, &cpi, nullptr, &pool), VK_SUCCESS);
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  ASSERT_EQ(vkAllocateCommandBuffers(app.device, &ai, &cb), VK_SUCCESS);
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  vkBeginCommandBuffer(cb, &bi);
  plan.record(cb, ops);
  // Shader writes -> the host's read after the wait.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr,
                       0, nullptr);
  vkEndCommandBuffer(cb);
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  ASSERT_EQ(vkQueueSubmit(app.queue, 1, &si, VK_NULL_HANDLE), VK_SUCCESS);
  ASSERT_EQ(vkQueueWaitIdle(app.queue), VK_SUCCESS);
  vkDestroyCommandPool(app.device, pool, nullptr);
  out.download(y.data(), y.size() * 4);
  for (int r = 0; r < 12; ++r) EXPECT_EQ(y[r * 4], r < 11 ? 4.f : 0.f) << "row " << r;
}

// BorrowedDevice::matrix_units: refused without 16-bit storage, and on a device without matrix units
// vkgmm can use; where the device has them and the app enabled them, gmm runs on them.
TEST(Embedding, MatrixUnitsOnlyWhereTheAppEnabledThem) {
  App app(true);
  vkgmm::BorrowedDevice d = app.borrowed();
  d.matrix_units = true;
  std::string message;
  try {
    vkgmm::Context::wrap(d);
  } catch (const vkgmm::Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("BorrowedDevice.matrix_units"), std::string::npos) << message;
  EXPECT_NE(message.find("storage_buffer_16bit"), std::string::npos) << message;
  d.storage_buffer_16bit = app.storage16;
  if (!app.matrix_extension) {
    // Without 16-bit storage the first refusal stands; with it, the units are missing.
    EXPECT_EQ(status_of([&] { vkgmm::Context::wrap(d); }), vkgmm::Status::invalid_argument);
    d.matrix_units = false;
    EXPECT_TRUE(vkgmm::Context::wrap(d).info().matrix_extension.empty());
    GTEST_SKIP() << "the device offers no matrix units vkgmm can use: the refusal is all there is to test";
  }
  vkgmm::Context ctx = vkgmm::Context::wrap(d);
  EXPECT_EQ(ctx.info().matrix_extension, app.matrix_extension);
  EXPECT_GT(ctx.info().matrix_m, 0u);
  // Trusted with automatic schedules on every driver but NVIDIA's own (driverName "NVIDIA").
  EXPECT_EQ(ctx.info().matrix_automatic, ctx.info().driver.rfind("NVIDIA ", 0) != 0) << ctx.info().driver;
  vkgmm::GmmProblem p;
  p.m = 40;
  p.k = 32;
  p.n = 24;
  p.group_sizes = {16, 0, 21};  // rows 37..39 in no group: zero
  p.lhs_type = p.rhs_type = vkgmm::DType::f16;
  p.schedule = vkgmm::Schedule::matrix;  // refused where the context cannot run it
  vkgmm::GmmPlan plan(ctx, p);
  std::vector<float> x(40 * 32), w(3 * 32 * 24), y(40 * 24, -1.f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = vkgmm::round_to(vkgmm::DType::f16, float(int(i % 13) - 6) / 8.f);
  for (size_t i = 0; i < w.size(); ++i) w[i] = vkgmm::round_to(vkgmm::DType::f16, float(int(i % 7) - 3) / 4.f);
  vkgmm::Buffer lhs = ctx.create_buffer(plan.sizes().lhs), rhs = ctx.create_buffer(plan.sizes().rhs),
                out = ctx.create_buffer(plan.sizes().out);
  const std::vector<uint8_t> x16 = vkgmm::encode(vkgmm::DType::f16, x), w16 = vkgmm::encode(vkgmm::DType::f16, w);
  lhs.upload(x16.data(), x16.size());
  rhs.upload(w16.data(), w16.size());
  out.upload(y.data(), y.size() * 4);  // -1: the rows in no group must be written 0
  ctx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, {lhs.view(), rhs.view(), out.view(), {}}); });
  out.download(y.data(), y.size() * 4);
  for (int r = 0; r < 40; ++r) {
    const int g = r < 16 ? 0 : r < 37 ? 2 : -1;
    for (int c = 0; c < 24; ++c) {
      double want = 0;  // small multiples of 1/32: every sum exact in f32
      for (int k = 0; g >= 0 && k < 32; ++k) want += double(x[r * 32 + k]) * w[(g * 32 + k) * 24 + c];
      ASSERT_EQ(y[r * 24 + c], float(want)) << "row " << r << ", column " << c;
    }
  }
}

TEST(Embedding, EmptyProblemHoldsNoMetadata) {
  App app;
  vkgmm::Context ctx = vkgmm::Context::wrap(app.borrowed());
  vkgmm::GmmProblem p = small_problem();
  p.m = 0;
  p.group_sizes = {0, 0};
  EXPECT_EQ(vkgmm::GmmPlan(ctx, p).metadata_bytes(), 0u);
}

}  // namespace
