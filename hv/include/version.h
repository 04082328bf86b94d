#ifndef VMI_HV_VERSION_H
#define VMI_HV_VERSION_H
#define HV_VERSION "0.1"
#endif
