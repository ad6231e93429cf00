// stacks_cxx.cc - a C++ program for the call-stack tests, built -O2
// -fomit-frame-pointer: operator new and new[] inside a namespaced method,
// a template and a std::vector.  Fixed counts and sizes (tests/stacks_e2e.sh):
//   shapes::Factory::make_circles   11 x new Circle (40 bytes)   = 440
//   make_array<double>               4 x new double[25] (200 bytes) = 800
#include <cstdio>
#include <vector>

namespace shapes {
struct Circle {
    double x, y, r, area, perimeter;
};

class Factory {
  public:
    __attribute__((noinline)) void make_circles(int n);
    std::vector<Circle *> made;
};

void Factory::make_circles(int n)
{
    made.reserve(64);  // the vector's buffer: allocated by std::vector
    for (int i = 0; i < n; i++) {
        Circle *c = new Circle();
        c->r = i;
        made.push_back(c);
    }
}
}  // namespace shapes

template <typename T> __attribute__((noinline)) T *make_array(int n)
{
    T *a = new T[n];
    a[0] = T();
    return a;
}

int main()
{
    shapes::Factory f;
    f.make_circles(11);
    double *kept[4];
    for (int i = 0; i < 4; i++)
        kept[i] = make_array<double>(25);
    std::printf("%d %p\n", (int)f.made.size(), (void *)kept[3]);
    for (auto *c : f.made)
        delete c;
    for (int i = 0; i < 4; i++)
        delete[] kept[i];
    return 0;
}
